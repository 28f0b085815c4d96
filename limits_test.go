package queuemax

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// span is one execution as its handler saw it.
type span struct{ start, end time.Time }

// maxOverlap returns the most spans running at one instant.
func maxOverlap(spans []span) int {
	type ev struct {
		t time.Time
		d int
	}
	evs := make([]ev, 0, 2*len(spans))
	for _, s := range spans {
		evs = append(evs, ev{s.start, 1}, ev{s.end, -1})
	}
	// An end and a start at the same instant do not overlap.
	sort.Slice(evs, func(i, j int) bool {
		if !evs[i].t.Equal(evs[j].t) {
			return evs[i].t.Before(evs[j].t)
		}
		return evs[i].d < evs[j].d
	})
	n, most := 0, 0
	for _, e := range evs {
		n += e.d
		most = max(most, n)
	}
	return most
}

// maxInWindow returns the most times within any window of length w.
// checkRate fails t when a window of per holds more than n of starts (a
// rate of n per per). The engine moves a start's token to the instant it
// calls the handler, and a token stays out for per and a margin of per/50
// (20 ms a second); the test's handler reads its own clock once it runs,
// and the move is a store write of its own. Under the race detector on a
// loaded machine both can come late: there the windows checked are a
// tenth shorter and may hold a claim's worth more (claim: a process's
// free workers), and `make test` runs these tests again without the race
// detector, where the exact bound holds (see the Makefile).
func checkRate(t *testing.T, starts []time.Time, n int, per time.Duration, claim int) {
	t.Helper()
	w, most := per, n
	if raceEnabled {
		w, most = per-per/10, n+claim
	}
	if m := maxInWindow(starts, w); m > most {
		t.Errorf("%d starts within %v; want at most the burst, %d (%d under the race detector)", m, w, n, n+claim)
	}
}

func maxInWindow(ts []time.Time, w time.Duration) int {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	most, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// TestGlobalLimits_TwoClients: two clients on one directory, 6 workers
// each, never run more than the global concurrency of 2 together; every
// job completes; Stats shows the limit and its use.
func TestGlobalLimits_TwoClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	var spans []span
	var running, most atomic.Int64
	var holding atomic.Bool
	release := make(chan struct{})
	opts := TaskOptions{GlobalConcurrency: 2}
	h := Define("t.Limited", opts, func(ctx context.Context, a echoArgs) error {
		s := span{start: time.Now()}
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if a.N == 0 {
			holding.Store(true)
			<-release // the first job holds its slot until Stats was read
		} else {
			time.Sleep(2 * time.Millisecond) // the job's work
		}
		running.Add(-1)
		s.end = time.Now()
		mu.Lock()
		spans = append(spans, s)
		mu.Unlock()
		return nil
	})
	cfg := Config{Dir: dir, Shards: 2, Workers: 6, Handlers: []Handler{h}}
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	const n = 40
	for i := range n {
		if _, err := a.c.Enqueue(a.ctx, "t.Limited", echoArgs{i}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	evs := collect(a.c, EventCompleted)
	evsB := collect(b.c, EventCompleted)
	run(t, a.c)
	run(t, b.c)
	waitFor(t, "the first job to hold a slot", holding.Load)
	s, err := a.c.Stats(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GlobalLimits) != 1 || s.GlobalLimits[0].Name != "t.Limited" || s.GlobalLimits[0].Concurrency != 2 || s.GlobalLimits[0].Running < 1 {
		t.Errorf("Stats.GlobalLimits = %+v; want t.Limited with concurrency 2 and at least 1 running", s.GlobalLimits)
	}
	close(release)
	done := 0
	timeout := time.After(60 * time.Second)
	for done < n {
		select {
		case <-evs:
			done++
		case <-evsB:
			done++
		case <-timeout:
			t.Fatalf("%d of %d jobs completed", done, n)
		}
	}
	mu.Lock()
	if m := maxOverlap(spans); m > 2 || most.Load() > 2 {
		t.Errorf("%d jobs ran at once (counter %d); want at most the global concurrency 2", m, most.Load())
	}
	mu.Unlock()
	// The slots go back once the acknowledgements committed.
	waitFor(t, "every slot back", func() bool {
		s, err := a.c.Stats(a.ctx)
		return err == nil && len(s.GlobalLimits) == 1 && s.GlobalLimits[0].Running == 0
	})
}

// TestGlobalLimits_Rate: 30 jobs under a global rate of 20/s over two
// clients: 20 start at once (a full bucket), the rest a second later; no
// second holds more than 20 starts.
func TestGlobalLimits_Rate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	var starts []time.Time
	h := Define("t.Rated", TaskOptions{GlobalRateLimit: Rate{Limit: 20, Per: time.Second}}, func(ctx context.Context, a echoArgs) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	})
	cfg := Config{Dir: dir, Shards: 2, Workers: 4, Handlers: []Handler{h}}
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	const n = 30
	for i := range n {
		if _, err := a.c.Enqueue(a.ctx, "t.Rated", echoArgs{i}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	run(t, a.c)
	run(t, b.c)
	waitFor(t, "every job to start", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) == n })
	mu.Lock()
	defer mu.Unlock()
	checkRate(t, starts, 20, time.Second, 4)
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if d := starts[n-1].Sub(starts[0]); d < time.Second {
		t.Errorf("30 starts took %v; want at least a second", d)
	}
}

// TestGlobalLimits_Invalid: a bad global limit is a clear error at Open.
func TestGlobalLimits_Invalid(t *testing.T) {
	t.Parallel()
	for _, o := range []TaskOptions{
		{GlobalConcurrency: -1},
		{GlobalRateLimit: Rate{Limit: 5}},
		{GlobalRateLimit: Rate{Limit: -5, Per: time.Second}},
	} {
		h := Define("t.Bad", o, func(context.Context, echoArgs) error { return nil })
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}})
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Open with %+v = %v; want ErrInvalidConfig and ErrInvalidLimit", o, err)
		}
	}
}

// TestGlobalLimits_Held: a ready job waiting for its task's global limit
// says so in Job and Jobs, and is neither failed nor retried. (The process
// holding the only slot claims up to three jobs ahead for it, which wait
// in the process, processing, for the slot.)
func TestGlobalLimits_Held(t *testing.T) {
	t.Parallel()
	var holding, started atomic.Int64
	release := make(chan struct{})
	h := Define("t.Held", TaskOptions{GlobalConcurrency: 1}, func(ctx context.Context, a echoArgs) error {
		holding.Add(1)
		started.Add(1)
		defer holding.Add(-1)
		<-release
		return nil
	})
	b := setup(t, Config{Shards: 1, Workers: 4, Handlers: []Handler{h}})
	var ids []JobID
	for i := range 6 {
		id, err := b.c.Enqueue(b.ctx, "t.Held", echoArgs{i}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	evs := collect(b.c, EventCompleted)
	run(t, b.c)
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	waitFor(t, "a job to hold the slot", func() bool { return holding.Load() == 1 })
	waitFor(t, "the jobs claimed ahead", func() bool {
		js, _ := b.c.Jobs(b.ctx, ListParams{Status: StatusProcessing})
		return len(js) == 4
	})
	const want = "global concurrency of task t.Held reached (1/1 running)"
	j, err := b.c.Job(b.ctx, ids[5])
	if err != nil || j.Status != StatusPending || j.Held != want || j.Attempts != 0 {
		t.Errorf("Job = %+v, %v; want pending, never attempted, held: %q", j, err, want)
	}
	pending, err := b.c.Jobs(b.ctx, ListParams{Status: StatusPending})
	if err != nil || len(pending) != 2 {
		t.Fatalf("Jobs(pending) = %d jobs, %v; want 2", len(pending), err)
	}
	for _, p := range pending {
		if p.Held != want {
			t.Errorf("job %d Held = %q; want %q", p.ID, p.Held, want)
		}
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d handlers started; want 1 (the global concurrency)", n)
	}
	close(release)
	closed = true
	waitEvents(t, evs, 6)
	if s, err := b.c.Stats(b.ctx); err != nil || s.Failed != 0 {
		t.Errorf("Stats = %+v, %v; want nothing failed", s, err)
	}
	if ws, _ := b.c.WorkerStats(); ws.Retried != 0 || ws.Failed != 0 {
		t.Errorf("WorkerStats = %+v; want nothing retried or failed", ws)
	}
}
