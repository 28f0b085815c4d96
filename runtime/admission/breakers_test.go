package admission

import (
	"errors"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// breakerRow reads the stored breaker of the catch-all handler.
func (b *bundle) breakerRow() store.BreakerRow {
	b.t.Helper()
	rows, err := b.st.BreakerList(b.t.Context())
	if err != nil {
		b.t.Fatal(err)
	}
	for _, r := range rows {
		if r.Task == "" {
			return r
		}
	}
	return store.BreakerRow{State: store.BreakerClosed}
}

// setBreaker writes the catch-all handler's stored breaker.
func (b *bundle) setBreaker(set func(r *store.BreakerRow)) {
	b.t.Helper()
	if _, err := b.st.BreakerUpdate(b.t.Context(), []string{""}, func(r *store.BreakerRow) bool { set(r); return true }); err != nil {
		b.t.Fatal(err)
	}
}

// TestBreakers_NeutralProbe: a probe whose job fails on its own input
// counts for nothing: the breaker stays half-open with its count, the
// probe is freed and the next round probes again (with another job).
func TestBreakers_NeutralProbe(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.setBreaker(func(r *store.BreakerRow) {
		r.State, r.Failures, r.OpenedAt, r.Until = store.BreakerOpen, 5, b.now.Add(-time.Minute), b.now
	})
	b.enqueue("t", 2)
	seen := map[store.JobID]bool{}
	for i := range 2 {
		jobs := b.round(4)
		if len(jobs) != 1 || seen[jobs[0].ID] {
			t.Fatalf("round %d: claimed %d jobs (seen before: %v); want one new probe", i, len(jobs), len(jobs) == 1 && seen[jobs[0].ID])
		}
		j := jobs[0]
		seen[j.ID] = true
		if r := b.breakerRow(); r.State != store.BreakerHalfOpen || r.ProbeOwner != b.c.BreakerOwner() {
			t.Fatalf("round %d: breaker during the probe = %+v; want half-open, held by %s", i, r, b.c.BreakerOwner())
		}
		if !b.c.Start(j, true) {
			t.Fatalf("round %d: the probe did not start", i)
		}
		b.c.End(j)
		b.c.Record(j, errors.New("bad input"), true)
		if r := b.breakerRow(); r.State != store.BreakerHalfOpen || r.ProbeOwner != "" || r.Failures != 5 {
			t.Fatalf("round %d: breaker after a bad-input probe = %+v; want half-open, probe free, 5 failures", i, r)
		}
	}
}

// TestBreakers_ProbeOfKilledProcessExpires: a probe held by a process
// that died (never reported) blocks others only until it expires; a
// successful probe then closes the breaker.
func TestBreakers_ProbeOfKilledProcessExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.setBreaker(func(r *store.BreakerRow) {
		r.State, r.Failures, r.ProbeOwner, r.ProbeExpires = store.BreakerHalfOpen, 5, "dead#1", b.now.Add(time.Minute)
	})
	b.enqueue("t", 1)
	b.now = b.now.Add(59 * time.Second)
	if jobs := b.round(4); len(jobs) != 0 {
		t.Fatalf("claimed %d while the dead process's probe holds; want 0", len(jobs))
	}
	b.now = b.now.Add(time.Second)
	jobs := b.round(4)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d once the probe expired; want the probe", len(jobs))
	}
	b.c.Start(jobs[0], true)
	b.c.End(jobs[0])
	b.c.Record(jobs[0], nil, true)
	if r := b.breakerRow(); !r.Closed() || r.Failures != 0 {
		t.Fatalf("breaker = %+v; want closed after the probe succeeded", r)
	}
}

// TestBreakers_StaleCopyReadAtStart: a breaker another process opened
// holds the start of a job claimed before, once this process's copy is
// older than breakerRefresh, even though no round planned since.
func TestBreakers_StaleCopyReadAtStart(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.enqueue("t", 2)
	jobs := b.round(2) // reads the copy: closed
	if len(jobs) != 2 {
		t.Fatalf("claimed %d; want 2", len(jobs))
	}
	b.setBreaker(func(r *store.BreakerRow) { // another process opens it
		r.State, r.Failures, r.OpenedAt, r.Until = store.BreakerOpen, 5, b.now, b.now.Add(time.Minute)
	})
	if !b.c.Start(jobs[0], false) {
		t.Fatal("a start within breakerRefresh of the last read refused the job; want the fresh copy trusted")
	}
	b.c.brk.mu.Lock()
	b.c.brk.readAt = time.Now().Add(-breakerRefresh) // the copy is now stale
	b.c.brk.readMono.Store(monoNow() - int64(breakerRefresh))
	b.c.brk.mu.Unlock()
	if b.c.Start(jobs[1], false) {
		t.Error("a job started after another process opened its breaker (the stale copy was not read again)")
	}
}
