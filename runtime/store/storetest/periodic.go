package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testPeriodicArea runs the Periodic area: a registered schedule keeps its
// stored next run across re-registrations, and PeriodicFire enqueues each
// slot once, a compare-and-swap on the next run plus the unique (task,
// slot) row.
func testPeriodicArea(t *testing.T, s *suite) {
	t.Run("RegisterKeepsNextRun", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		reg := func(schedule string, next time.Time) {
			t.Helper()
			if err := b.st.PeriodicRegister(b.ctx, store.PeriodicParams{Task: "p.A", Schedule: schedule, Misfire: "skip",
				Next: next, Now: t0}); err != nil {
				t.Fatalf("PeriodicRegister(%s): %v", schedule, err)
			}
		}
		reg("@every 1h0m0s", t0.Add(time.Hour))
		reg("@every 1h0m0s", t0.Add(2*time.Hour)) // a restart: the stored next run stays
		st := periodicState(t, b, "p.A")
		if !st.NextRun.Equal(t0.Add(time.Hour)) || !st.LastRun.IsZero() || st.Schedule != "@every 1h0m0s" || st.Misfire != "skip" {
			t.Errorf("after re-registering = %+v; want next run %v kept, never run", st, t0.Add(time.Hour))
		}
		reg("@every 30m0s", t0.Add(30*time.Minute)) // a new schedule takes the new next run
		if st := periodicState(t, b, "p.A"); !st.NextRun.Equal(t0.Add(30*time.Minute)) || st.Schedule != "@every 30m0s" {
			t.Errorf("after a schedule change = %+v; want next run %v", st, t0.Add(30*time.Minute))
		}
	})

	t.Run("FireOncePerSlot", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		due := t0.Add(time.Hour)
		if err := b.st.PeriodicRegister(b.ctx, store.PeriodicParams{Task: "p.B", Schedule: "@every 1h0m0s", Misfire: "skip",
			Next: due, Now: t0}); err != nil {
			t.Fatalf("PeriodicRegister: %v", err)
		}
		job := store.InsertParams{Task: "p.B", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: due}
		fire := func(due, slot, next time.Time) (store.JobID, bool) {
			t.Helper()
			id, fired, err := b.st.PeriodicFire(b.ctx, store.PeriodicFireParams{Task: "p.B", Due: due, Slot: slot, Next: next, Job: job})
			if err != nil {
				t.Fatalf("PeriodicFire(due %v, slot %v): %v", due, slot, err)
			}
			return id, fired
		}
		id, fired := fire(due, due, due.Add(time.Hour))
		if !fired || id == 0 {
			t.Fatalf("first fire = %v, %v; want a job", id, fired)
		}
		if j, err := b.st.Job(b.ctx, id); err != nil || j.Task != "p.B" || j.Status != store.StatusPending {
			t.Errorf("fired job = %+v, %v; want a pending p.B", j, err)
		}
		st := periodicState(t, b, "p.B")
		if !st.NextRun.Equal(due.Add(time.Hour)) || st.LastRun.IsZero() || st.LastJobID != id {
			t.Errorf("after firing = %+v; want next run %v, last job %v", st, due.Add(time.Hour), id)
		}
		// A second scheduler that read the same next run loses the swap.
		if id2, fired := fire(due, due, due.Add(time.Hour)); fired || id2 != 0 {
			t.Errorf("second fire of the slot = %v, %v; want nothing", id2, fired)
		}
		// Zero slot: skip the due slot without a job, moving the next run.
		if id3, fired := fire(due.Add(time.Hour), time.Time{}, due.Add(2*time.Hour)); !fired || id3 != 0 {
			t.Errorf("skip = %v, %v; want fired without a job", id3, fired)
		}
		if st := periodicState(t, b, "p.B"); !st.NextRun.Equal(due.Add(2*time.Hour)) || st.LastJobID != id {
			t.Errorf("after the skip = %+v; want next run %v, last job still %v", st, due.Add(2*time.Hour), id)
		}
		if s := stats(t, b); s.Pending+s.Scheduled != 1 {
			t.Errorf("%d jobs waiting, want the one fired slot", s.Pending+s.Scheduled)
		}
	})
}

// periodicState returns the stored state of one periodic task.
func periodicState(t *testing.T, b *testBundle, task string) store.PeriodicState {
	t.Helper()
	ps, err := b.st.PeriodicList(b.ctx)
	if err != nil {
		t.Fatalf("PeriodicList: %v", err)
	}
	for _, p := range ps {
		if p.Task == task {
			return p
		}
	}
	t.Fatalf("PeriodicList = %+v: no %s", ps, task)
	return store.PeriodicState{}
}
