package queuemax

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueueLimits_SaturatedPrefetch(t *testing.T) {
	t.Parallel()
	testQueueSaturatedPrefetch(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_QueueLimitsSaturatedPrefetch(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testQueueSaturatedPrefetch(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// testQueueSaturatedPrefetch: a client holding a slot of a queue's cap for
// each of its workers claims ahead (prefetch), as without the cap, yet
// never runs more than the cap; a lower cap set by another client sends
// the prefetched jobs back to pending, unspent, and binds once the jobs
// that were running end.
func testQueueSaturatedPrefetch(t *testing.T, cfg Config) {
	var mu sync.Mutex
	var old, later []span // the first four jobs' runs, and those that started after the cap went down
	var started atomic.Int64
	var loweredAt atomic.Int64 // unix ns
	release := make(chan struct{})
	h := Define("t.QSat", TaskOptions{Queue: "sat"}, func(ctx context.Context, a echoArgs) error {
		s := span{start: time.Now()}
		first := started.Add(1) <= 4
		if first {
			<-release // the first four hold every worker until the cap changed
		}
		s.end = time.Now()
		mu.Lock()
		switch {
		case first:
			old = append(old, s)
		case loweredAt.Load() != 0 && s.start.UnixNano() > loweredAt.Load():
			later = append(later, s)
		}
		mu.Unlock()
		return nil
	})
	cfg.Workers, cfg.ClaimBatch, cfg.Handlers = 4, 16, []Handler{h}
	a := setup(t, cfg)
	cfg.WorkerID, cfg.Handlers = "other", nil
	b := setup(t, cfg)
	ctx := a.ctx
	if err := b.c.SetQueueLimits(ctx, "sat", QueueLimits{Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	const n = 30
	for i := range n {
		if _, err := a.c.Enqueue(ctx, "t.QSat", echoArgs{i}, Opts{}); err != nil { // a knows the task's queue
			t.Fatal(err)
		}
	}
	evs := collect(a.c, EventCompleted)
	run(t, a.c)
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	processing := func() int {
		jobs, err := b.c.Jobs(ctx, ListParams{Status: StatusProcessing, Limit: n})
		if err != nil {
			t.Fatal(err)
		}
		return len(jobs)
	}
	// Holding 4 slots for 4 workers, the client claims ahead.
	waitFor(t, "jobs claimed ahead of the busy workers", func() bool { return started.Load() == 4 && processing() > 4 })
	if got := started.Load(); got != 4 {
		t.Fatalf("%d handlers started under a cap of 4; want 4", got)
	}
	// Another client lowers the cap: the prefetched jobs go back to
	// pending, never attempted.
	loweredAt.Store(time.Now().UnixNano())
	if err := b.c.SetQueueLimits(ctx, "sat", QueueLimits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the prefetched jobs back to pending", func() bool { return processing() == 4 })
	pending, err := b.c.Jobs(ctx, ListParams{Status: StatusPending, Limit: n})
	if err != nil {
		t.Fatal(err)
	}
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
	timeout := time.After(60 * time.Second)
	for done := 0; done < n; {
		select {
		case <-evs:
			done++
		case <-timeout:
			t.Fatalf("%d of %d jobs completed", done, n)
		}
	}
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
			if !o.start.After(s.start) && o.end.After(s.start) {
				at++
			}
		}
		if at > 2 {
			t.Errorf("a job started with %d running (itself included) after the cap went down to 2", at)
		}
	}
	if ws, _ := a.c.WorkerStats(); ws.Retried != 0 || ws.Failed != 0 {
		t.Errorf("WorkerStats = %+v; want nothing retried or failed", ws)
	}
}
