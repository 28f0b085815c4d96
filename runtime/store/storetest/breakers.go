package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
)

// testBreakersArea: the circuit breakers every process shares
// (store.BreakerStore).
func testBreakersArea(t *testing.T, s *suite) {
	t.Run("RoundTrip", func(t *testing.T) { t.Parallel(); testBreakerRoundTrip(t, s) })
	t.Run("UpdatesAreAtomic", func(t *testing.T) { t.Parallel(); testBreakerAtomic(t, s) })
	t.Run("ProbeTokenExpires", func(t *testing.T) { t.Parallel(); testBreakerProbeExpires(t, s) })
	t.Run("ClaimProbePrefersFreshJobs", func(t *testing.T) { t.Parallel(); testClaimProbe(t, s) })
}

func breakers(t *testing.T, b *testBundle) store.BreakerStore {
	t.Helper()
	bs := b.st
	return bs
}

// closedRows drops the closed rows without failures (a store may keep
// one for a task it only read).
func openRows(rows []store.BreakerRow) []store.BreakerRow {
	var out []store.BreakerRow
	for _, r := range rows {
		if !r.Closed() || r.Failures > 0 {
			out = append(out, r)
		}
	}
	return out
}

func testBreakerRoundTrip(t *testing.T, s *suite) {
	b := s.setup(t, 2)
	bs := breakers(t, b)
	if rows, err := bs.BreakerList(b.ctx); err != nil || len(openRows(rows)) != 0 {
		t.Fatalf("BreakerList of a fresh store = %v, %v; want none", rows, err)
	}
	// Reading without a change writes nothing.
	rows, err := bs.BreakerUpdate(b.ctx, []string{"a"}, func(*store.BreakerRow) bool { return false })
	if err != nil || len(rows) != 1 || rows[0].Task != "a" || !rows[0].Closed() {
		t.Fatalf("BreakerUpdate(no change) = %+v, %v; want a closed row of a", rows, err)
	}
	want := store.BreakerRow{Task: "a", State: store.BreakerHalfOpen, Failures: 7, OpenedAt: t0, Until: t0.Add(time.Minute),
		ProbeOwner: "w1#x", ProbeExpires: t0.Add(2 * time.Minute), LastError: "dial tcp: connection refused", UpdatedAt: t0.Add(time.Second)}
	rows, err = bs.BreakerUpdate(b.ctx, []string{"a", ""}, func(r *store.BreakerRow) bool {
		if r.Task == "" {
			r.State, r.Failures, r.UpdatedAt = store.BreakerClosed, 1, t0
			return true
		}
		task := r.Task
		*r = want
		r.Task = task
		return true
	})
	if err != nil || len(rows) != 2 {
		t.Fatalf("BreakerUpdate = %v, %v", rows, err)
	}
	got, err := bs.BreakerList(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantAll := []store.BreakerRow{{Task: "", State: store.BreakerClosed, Failures: 1, UpdatedAt: t0}, want}
	if d := cmp.Diff(wantAll, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("BreakerList (-want +got):\n%s", d)
	}
}

// testBreakerAtomic: concurrent read-modify-write updates never lose one.
func testBreakerAtomic(t *testing.T, s *suite) {
	b := s.setup(t, 1)
	bs := breakers(t, b)
	pol := breaker.Policy{Threshold: 1 << 30, Timeout: time.Minute, ProbeTTL: time.Minute}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				if _, err := bs.BreakerUpdate(b.ctx, []string{"t"}, func(r *store.BreakerRow) bool {
					return breaker.Apply(r, breaker.Outcomes{Failures: 1, LastError: "timeout"}, pol, t0)
				}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rows, err := bs.BreakerList(b.ctx)
	if err != nil || len(rows) != 1 || rows[0].Failures != 20 {
		t.Fatalf("after 20 concurrent counted failures: %+v, %v; want failures 20", rows, err)
	}
}

// testBreakerProbeExpires: one probe at a time; a probe's holder that
// never reports back (killed) loses it at ProbeExpires.
func testBreakerProbeExpires(t *testing.T, s *suite) {
	b := s.setup(t, 1)
	bs := breakers(t, b)
	pol := breaker.Policy{Threshold: 2, Timeout: time.Minute, ProbeTTL: 30 * time.Second}
	take := func(owner string, now time.Time) bool {
		t.Helper()
		var got bool
		if _, err := bs.BreakerUpdate(b.ctx, []string{"t"}, func(r *store.BreakerRow) bool {
			got = breaker.TakeProbe(r, owner, pol, now)
			return got
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if _, err := bs.BreakerUpdate(b.ctx, []string{"t"}, func(r *store.BreakerRow) bool {
		return breaker.Apply(r, breaker.Outcomes{Failures: 2, LastError: "503"}, pol, t0)
	}); err != nil {
		t.Fatal(err)
	}
	if take("a", t0.Add(59*time.Second)) {
		t.Fatal("probe taken while open")
	}
	if !take("a", t0.Add(time.Minute)) {
		t.Fatal("probe not taken once the open period ended")
	}
	if take("b", t0.Add(time.Minute+29*time.Second)) {
		t.Fatal("a second probe taken while the first is held")
	}
	// a was killed: its hold lapses and b probes.
	if !take("b", t0.Add(time.Minute+30*time.Second)) {
		t.Fatal("probe not taken after the holder's hold expired")
	}
	// b's probe failed on its own input: released, not counted.
	rows, err := bs.BreakerUpdate(b.ctx, []string{"t"}, func(r *store.BreakerRow) bool {
		return breaker.Apply(r, breaker.Outcomes{Owner: "b", ProbeDone: true}, pol, t0.Add(2*time.Minute))
	})
	if err != nil || rows[0].State != store.BreakerHalfOpen || rows[0].ProbeOwner != "" || rows[0].Failures != 2 {
		t.Fatalf("after a neutral probe: %+v, %v; want half-open, no probe, failures 2", rows, err)
	}
	if !take("c", t0.Add(2*time.Minute)) {
		t.Fatal("probe not taken after the last was released")
	}
	rows, err = bs.BreakerUpdate(b.ctx, []string{"t"}, func(r *store.BreakerRow) bool {
		return breaker.Apply(r, breaker.Outcomes{Owner: "c", ProbeDone: true, Success: true}, pol, t0.Add(2*time.Minute))
	})
	if err != nil || rows[0].State != store.BreakerClosed || rows[0].Failures != 0 {
		t.Fatalf("after a successful probe: %+v, %v; want closed, failures 0", rows, err)
	}
}

// testClaimProbe: a probe claims a job that never ran first, then one
// whose last attempt failed on a dependency (marked), and only then one
// that failed on its own input, whatever their priorities; of its tasks
// only.
func testClaimProbe(t *testing.T, s *suite) {
	b := s.setup(t, 2)
	bs := breakers(t, b)
	// bad (priority 2) and dep (priority 1) run once and fail.
	run := insert(t, b, store.InsertParams{Shard: 0, Task: "t", Priority: 2}, store.InsertParams{Shard: 1, Task: "t", Priority: 1})
	claimed := claim(t, b, 2, t0)
	if len(claimed) != 2 {
		t.Fatalf("claimed %d, want 2", len(claimed))
	}
	for _, j := range claimed {
		if errs := b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"},
			Error: "failed", ErrorType: "*errors.errorString", RetryAt: t0, Now: t0}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	bad, dep := run[0], run[1]
	if err := bs.MarkDependencyFailures(b.ctx, []store.DependencyMark{{ID: dep, Attempt: 1}, {ID: bad, Attempt: 0}}); err != nil {
		t.Fatal(err)
	}
	fresh := insert(t, b, store.InsertParams{Shard: 1, Task: "t"}, store.InsertParams{Shard: 1, Task: "other", Priority: 2})
	p := store.ClaimParams{WorkerID: "w1", Max: 1, Now: t0.Add(time.Second), Tasks: []string{"t"}}
	for _, want := range []store.JobID{fresh[0], dep, bad} {
		got, err := bs.ClaimProbe(b.ctx, p)
		if err != nil || len(got) != 1 || got[0].ID != want || got[0].Task != "t" || got[0].Status != store.StatusProcessing {
			t.Fatalf("ClaimProbe = %v, %v; want job %v (fresh %v, dependency failure %v, bad input %v)", got, err, want, fresh[0], dep, bad)
		}
	}
	if got, err := bs.ClaimProbe(b.ctx, p); err != nil || len(got) != 0 {
		t.Fatalf("ClaimProbe with no job of t left = %v, %v; want none", got, err)
	}
}
