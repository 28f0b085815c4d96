package engine

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/store"
)

// setQueueLimits stores queue's rule through l's store and tells l's
// engine, as Client.SetQueueLimits does; other engines see it at their
// next refresh.
func (l *live) setQueueLimits(queue string, r store.LimitRule) {
	l.t.Helper()
	if err := l.st.SetQueueLimits(l.t.Context(), queue, r, time.Now().UTC()); err != nil {
		l.t.Fatal(err)
	}
	if l.e != nil {
		l.e.QueueLimitsChanged()
	}
}

// TestQueueLimits_Concurrency: a queue with a global concurrency of 1 over
// two engines of 4 workers runs one job at a time (the others wait
// pending, held, never attempted, and say why); raised to 2 by the other
// engine while a job holds the only slot, a second job starts beside it;
// the limit's use shows it, and every slot goes back.
func TestQueueLimits_Concurrency(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var spans []span
	var running, most, started atomic.Int64
	release := make(chan struct{})
	h := handle(func(context.Context, *store.Job) (any, error) {
		s := span{Start: time.Now()}
		raise(&most, running.Add(1))
		if started.Add(1) <= 2 {
			<-release // the first two hold their slots until the test saw them
		} else {
			time.Sleep(time.Millisecond) // the job's work
		}
		running.Add(-1)
		s.End = time.Now()
		mu.Lock()
		spans = append(spans, s)
		mu.Unlock()
		return nil, nil
	})
	rules := admission.Rules{}
	a, b := pair(t, 2, map[string]*Handler{"t.QLim": h}, rules)
	a.cfg.Workers, a.cfg.ClaimBatch = 4, 16
	b.cfg.Workers, b.cfg.ClaimBatch = 4, 16
	a.setQueueLimits("lim", store.LimitRule{Concurrency: 1})
	const n = 12
	ps := make([]any, n)
	for i := range ps {
		ps[i] = nArgs{i}
	}
	a.insertQ("t.QLim", "lim", ps...)
	a.start()
	b.start()
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	waitFor(t, "a job to hold the slot", func() bool { return started.Load() >= 1 })
	const want = "global concurrency of queue lim reached (1/1 running)"
	waitFor(t, "the other jobs to say why they wait", func() bool {
		pending := b.jobs(store.StatusPending, rules)
		return len(pending) == n-1 && pending[0].Held == want
	})
	if got := started.Load(); got != 1 {
		t.Fatalf("%d handlers started under a queue concurrency of 1; want 1", got)
	}
	for _, p := range b.jobs(store.StatusPending, rules) {
		if p.Held != want || p.Attempts != 0 {
			t.Errorf("job %d: held %q, attempts %d; want %q, never attempted", p.ID, p.Held, p.Attempts, want)
		}
	}
	if is := b.infos(rules); len(is) != 1 || is[0].Scope != "queue" || is[0].Name != "lim" || is[0].Concurrency != 1 || is[0].Running != 1 {
		t.Errorf("limits = %+v; want queue lim running 1/1", is)
	}
	// A live change by the other engine's process is seen at the next
	// claim: a second job starts while the first still holds its slot.
	b.setQueueLimits("lim", store.LimitRule{Concurrency: 2})
	waitFor(t, "a second job under the raised limit", func() bool { return started.Load() == 2 })
	if m := most.Load(); m != 2 {
		t.Errorf("%d jobs ran at once after raising the limit to 2; want 2", m)
	}
	close(release)
	closed = true
	completions(t, n, a, b)
	mu.Lock()
	if m := maxOverlap(spans); m > 2 || most.Load() > 2 {
		t.Errorf("%d jobs ran at once (counter %d); want at most the queue's concurrency 2", m, most.Load())
	}
	mu.Unlock()
	if s := a.e.Stats(); s.Retried != 0 || s.Failed != 0 {
		t.Errorf("engine stats = %+v; want nothing retried or failed", s)
	}
	waitFor(t, "every slot back", func() bool {
		is := a.infos(rules)
		return len(is) == 1 && is[0].Running == 0
	})
}

// TestQueueLimits_Rate: 25 jobs of a queue with a global rate of 10/s over
// two engines: no second holds more than 10 starts, so they take at least
// two seconds; a job of another queue is not held by it. (A timing bound:
// TIMING_TESTS in the Makefile runs it again without the race detector.)
func TestQueueLimits_Rate(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var starts []time.Time
	var other atomic.Bool
	h := handle(func(context.Context, *store.Job) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil, nil
	})
	free := handle(func(context.Context, *store.Job) (any, error) { other.Store(true); return nil, nil })
	a, b := pair(t, 2, map[string]*Handler{"t.QRated": h, "t.Free": free}, admission.Rules{})
	a.cfg.Workers, a.cfg.ClaimBatch = 4, 16
	b.cfg.Workers, b.cfg.ClaimBatch = 4, 16
	a.setQueueLimits("rated", store.LimitRule{Rate: 10, Per: time.Second})
	const n = 25
	ps := make([]any, n)
	for i := range ps {
		ps[i] = nArgs{i}
	}
	a.insertQ("t.QRated", "rated", ps...)
	a.start()
	b.start()
	waitFor(t, "the first starts", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) >= 10 })
	// The rate binds now; a job of the default queue still runs at once.
	b.insertQ("t.Free", "", nArgs{})
	waitFor(t, "the job of another queue", other.Load)
	mu.Lock()
	if len(starts) == n {
		t.Errorf("every job started before the default queue's job ran; want the rate to hold them")
	}
	mu.Unlock()
	waitFor(t, "every job to start", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) == n })
	mu.Lock()
	defer mu.Unlock()
	checkRate(t, starts, 10, time.Second, 4)
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if d := starts[n-1].Sub(starts[0]); d < 2*time.Second {
		t.Errorf("25 starts at 10/s took %v; want at least 2s", d)
	}
}

// TestQueueLimits_SaturatedPrefetch: an engine holding a slot of a
// queue's cap for each of its workers claims ahead (prefetch), as without
// the cap, yet never runs more than the cap; a lower cap set by another
// process sends the prefetched jobs back to pending, unspent, and binds
// once the jobs that were running end.
func TestQueueLimits_SaturatedPrefetch(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var old, later []span // the first four jobs' runs, and those that started after the cap went down
	var started atomic.Int64
	var loweredAt atomic.Int64 // unix ns
	release := make(chan struct{})
	h := handle(func(context.Context, *store.Job) (any, error) {
		s := span{Start: time.Now()}
		first := started.Add(1) <= 4
		if first {
			<-release // the first four hold every worker until the cap changed
		}
		s.End = time.Now()
		mu.Lock()
		switch {
		case first:
			old = append(old, s)
		case loweredAt.Load() != 0 && s.Start.UnixNano() > loweredAt.Load():
			later = append(later, s)
		}
		mu.Unlock()
		return nil, nil
	})
	dir := t.TempDir()
	a := newLiveIn(t, dir, 2, map[string]*Handler{"t.QSat": h})
	a.cfg.Workers, a.cfg.ClaimBatch = 4, 16
	// The other process runs no engine: it sets the cap and looks.
	b := newLiveIn(t, dir, 2, nil)
	b.setQueueLimits("sat", store.LimitRule{Concurrency: 4})
	const n = 30
	ps := make([]any, n)
	for i := range ps {
		ps[i] = nArgs{i}
	}
	a.insertQ("t.QSat", "sat", ps...)
	a.start()
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	processing := func() int { return len(b.jobs(store.StatusProcessing, nil)) }
	// Holding 4 slots for 4 workers, the engine claims ahead.
	waitFor(t, "jobs claimed ahead of the busy workers", func() bool { return started.Load() == 4 && processing() > 4 })
	if got := started.Load(); got != 4 {
		t.Fatalf("%d handlers started under a cap of 4; want 4", got)
	}
	// Another process lowers the cap: the prefetched jobs go back to
	// pending, never attempted.
	loweredAt.Store(time.Now().UnixNano())
	b.setQueueLimits("sat", store.LimitRule{Concurrency: 2})
	waitFor(t, "the prefetched jobs back to pending", func() bool { return processing() == 4 })
	pending := b.jobs(store.StatusPending, nil)
	if len(pending) != n-4 {
		t.Errorf("%d jobs pending after the cap went down; want %d", len(pending), n-4)
	}
	for _, p := range pending {
		if p.Attempts != 0 {
			t.Errorf("job %d: %d attempts; want the prefetched job returned unspent", p.ID, p.Attempts)
		}
	}
	close(release)
	closed = true
	a.wait(n, queuemaxtype.EventCompleted)
	// Every start after the cap went down came with at most 2 jobs
	// running, the old four included.
	mu.Lock()
	defer mu.Unlock()
	if len(old) != 4 || len(later) == 0 {
		t.Fatalf("%d first jobs, %d started after the change; want 4 and some", len(old), len(later))
	}
	all := append(append([]span(nil), old...), later...)
	for _, s := range later {
		at := 0
		for _, o := range all {
			if !o.Start.After(s.Start) && o.End.After(s.Start) {
				at++
			}
		}
		if at > 2 {
			t.Errorf("a job started with %d running (itself included) after the cap went down to 2", at)
		}
	}
	if s := a.e.Stats(); s.Retried != 0 || s.Failed != 0 {
		t.Errorf("engine stats = %+v; want nothing retried or failed", s)
	}
}
