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

func TestQueueLimits_Concurrency(t *testing.T) {
	t.Parallel()
	testQueueConcurrency(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_QueueLimitsConcurrency(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testQueueConcurrency(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

func TestQueueLimits_Rate(t *testing.T) {
	t.Parallel()
	testQueueRate(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_QueueLimitsRate(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testQueueRate(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// testQueueConcurrency: a queue with a global concurrency of 1 over two
// clients of 4 workers runs one job at a time (the others wait pending,
// held, never attempted, and say why); raised to 2 by the other client
// while a job holds the only slot, a second job starts beside it; the
// limits show in Queues and Stats; cleared, they are gone.
func testQueueConcurrency(t *testing.T, cfg Config) {
	var mu sync.Mutex
	var spans []span
	var running, most, started atomic.Int64
	release := make(chan struct{})
	h := Define("t.QLim", TaskOptions{Queue: "lim"}, func(ctx context.Context, a echoArgs) error {
		s := span{start: time.Now()}
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if started.Add(1) <= 2 {
			<-release // the first two hold their slots until the test saw them
		} else {
			time.Sleep(time.Millisecond) // the job's work
		}
		running.Add(-1)
		s.end = time.Now()
		mu.Lock()
		spans = append(spans, s)
		mu.Unlock()
		return nil
	})
	cfg.Workers, cfg.Handlers = 4, []Handler{h}
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	ctx := a.ctx
	for _, bad := range []QueueLimits{{Concurrency: -1}, {Rate: Rate{Limit: 5}}, {Rate: Rate{Limit: -1, Per: time.Second}}} {
		if err := a.c.SetQueueLimits(ctx, "lim", bad); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("SetQueueLimits(%+v) = %v; want ErrInvalidLimit", bad, err)
		}
	}
	if err := a.c.SetQueueLimits(ctx, "Bad Name", QueueLimits{Concurrency: 1}); !errors.Is(err, ErrInvalidQueue) {
		t.Errorf("SetQueueLimits of a bad name = %v; want ErrInvalidQueue", err)
	}
	if err := a.c.SetQueueLimits(ctx, "lim", QueueLimits{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	const n = 12
	for i := range n {
		if _, err := a.c.Enqueue(ctx, "t.QLim", echoArgs{i}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	evs := collect(a.c, EventCompleted)
	evsB := collect(b.c, EventCompleted)
	run(t, a.c)
	run(t, b.c)
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	waitFor(t, "a job to hold the slot", func() bool { return started.Load() >= 1 })
	const want = "global concurrency of queue lim reached (1/1 running)"
	waitFor(t, "the other jobs to say why they wait", func() bool {
		pending, err := b.c.Jobs(ctx, ListParams{Status: StatusPending})
		return err == nil && len(pending) == n-1 && pending[0].Held == want
	})
	if got := started.Load(); got != 1 {
		t.Fatalf("%d handlers started under a queue concurrency of 1; want 1", got)
	}
	pending, _ := b.c.Jobs(ctx, ListParams{Status: StatusPending})
	for _, p := range pending {
		if p.Held != want || p.Attempts != 0 {
			t.Errorf("job %d: held %q, attempts %d; want %q, never attempted", p.ID, p.Held, p.Attempts, want)
		}
	}
	qs, err := b.c.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range qs {
		if q.Name == "lim" {
			found = true
			if q.Limits != (QueueLimits{Concurrency: 1}) {
				t.Errorf("Queues: lim Limits = %+v; want concurrency 1", q.Limits)
			}
		}
	}
	if !found {
		t.Errorf("Queues = %+v; want queue lim", qs)
	}
	s, err := b.c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GlobalLimits) != 1 || s.GlobalLimits[0].Scope != "queue" || s.GlobalLimits[0].Name != "lim" ||
		s.GlobalLimits[0].Concurrency != 1 || s.GlobalLimits[0].Running != 1 {
		t.Errorf("Stats.GlobalLimits = %+v; want queue lim running 1/1", s.GlobalLimits)
	}
	// A live change by the other client is seen at the next claim: a
	// second job starts while the first still holds its slot.
	if err := b.c.SetQueueLimits(ctx, "lim", QueueLimits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a second job under the raised limit", func() bool { return started.Load() == 2 })
	if m := most.Load(); m != 2 {
		t.Errorf("%d jobs ran at once after raising the limit to 2; want 2", m)
	}
	close(release)
	closed = true
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
		t.Errorf("%d jobs ran at once (counter %d); want at most the queue's concurrency 2", m, most.Load())
	}
	mu.Unlock()
	if ws, _ := a.c.WorkerStats(); ws.Retried != 0 || ws.Failed != 0 {
		t.Errorf("WorkerStats = %+v; want nothing retried or failed", ws)
	}
	waitFor(t, "every slot back", func() bool {
		s, err := a.c.Stats(ctx)
		return err == nil && len(s.GlobalLimits) == 1 && s.GlobalLimits[0].Running == 0
	})
	if err := a.c.SetQueueLimits(ctx, "lim", QueueLimits{}); err != nil {
		t.Fatal(err)
	}
	if s, err := a.c.Stats(ctx); err != nil || len(s.GlobalLimits) != 0 {
		t.Errorf("Stats.GlobalLimits after clearing = %+v, %v; want none", s.GlobalLimits, err)
	}
}

// testQueueRate: 25 jobs of a queue with a global rate of 10/s over two
// clients: no second holds more than 10 starts, so they take at least two
// seconds; a job of another queue is not held by it.
func testQueueRate(t *testing.T, cfg Config) {
	var mu sync.Mutex
	var starts []time.Time
	var other atomic.Bool
	h := Define("t.QRated", TaskOptions{Queue: "rated"}, func(ctx context.Context, a echoArgs) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	})
	free := Define("t.Free", TaskOptions{}, func(ctx context.Context, a echoArgs) error {
		other.Store(true)
		return nil
	})
	cfg.Workers, cfg.Handlers = 4, []Handler{h, free}
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	if err := a.c.SetQueueLimits(a.ctx, "rated", QueueLimits{Rate: Rate{Limit: 10, Per: time.Second}}); err != nil {
		t.Fatal(err)
	}
	const n = 25
	for i := range n {
		if _, err := a.c.Enqueue(a.ctx, "t.QRated", echoArgs{i}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	run(t, a.c)
	run(t, b.c)
	waitFor(t, "the first starts", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) >= 10 })
	// The rate binds now; a job of the default queue still runs at once.
	if _, err := b.c.Enqueue(b.ctx, "t.Free", echoArgs{}, Opts{}); err != nil {
		t.Fatal(err)
	}
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

// TestQueueLimits_WithTaskLimit: a task with a global limit in a queue with
// a tighter one (their starts taken in one store call) runs under both; a
// task without limits in another queue is not held. Also with the task's
// limit per key (limit_by, claimed by its own path).
func TestQueueLimits_WithTaskLimit(t *testing.T) {
	t.Parallel()
	t.Run("Task", func(t *testing.T) {
		t.Parallel()
		testQueueAndTaskLimit(t, TaskOptions{Queue: "tight", GlobalConcurrency: 3})
	})
	t.Run("PerKey", func(t *testing.T) {
		t.Parallel()
		testQueueAndTaskLimit(t, TaskOptions{Queue: "tight", GlobalConcurrency: 3, LimitBy: "n"})
	})
}

func testQueueAndTaskLimit(t *testing.T, opts TaskOptions) {
	var running, most, free atomic.Int64
	h := Define("t.Both", opts, func(ctx context.Context, a echoArgs) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Millisecond) // the job's work
		running.Add(-1)
		return nil
	})
	other := Define("t.Other", TaskOptions{}, func(ctx context.Context, a echoArgs) error { free.Add(1); return nil })
	b := setup(t, Config{Shards: 2, Workers: 4, Handlers: []Handler{h, other}})
	if err := b.c.SetQueueLimits(b.ctx, "tight", QueueLimits{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	const n = 12
	for i := range n {
		if _, err := b.c.Enqueue(b.ctx, "t.Both", echoArgs{i}, Opts{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.c.Enqueue(b.ctx, "t.Other", echoArgs{i}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	evs := collect(b.c, EventCompleted)
	run(t, b.c)
	waitEvents(t, evs, 2*n)
	if m := most.Load(); m != 1 {
		t.Errorf("%d jobs of queue tight ran at once; want 1 (its limit, below the task's 3)", m)
	}
	if f := free.Load(); f != n {
		t.Errorf("%d jobs of the default queue ran; want %d", f, n)
	}
	waitFor(t, "every slot back", func() bool {
		s, err := b.c.Stats(b.ctx)
		if err != nil {
			return false
		}
		for _, g := range s.GlobalLimits {
			if g.Running != 0 {
				return false
			}
		}
		return len(s.GlobalLimits) >= 2
	})
}

// TestQueueLimits_SlotRenewed: the slot of a running job of a limited
// queue is renewed by its process: its expiry in the store moves past the
// one its claim set (a process killed with kill -9 stops renewing, and the
// slot expires StuckTimeout after the last renewal).
func TestQueueLimits_SlotRenewed(t *testing.T) {
	t.Parallel()
	var started atomic.Int64
	release := make(chan struct{})
	h := Define("t.Long", TaskOptions{Queue: "long"}, func(ctx context.Context, a echoArgs) error {
		started.Add(1)
		<-release
		return nil
	})
	const stuck = 10 * time.Second
	b := setup(t, Config{Shards: 1, Workers: 2, Handlers: []Handler{h}, HeartbeatInterval: 50 * time.Millisecond, StuckTimeout: stuck})
	if err := b.c.SetQueueLimits(b.ctx, "long", QueueLimits{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := b.c.Enqueue(b.ctx, "t.Long", echoArgs{i}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	evs := collect(b.c, EventCompleted)
	run(t, b.c)
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	waitFor(t, "the first job to start", func() bool { return started.Load() == 1 })
	claimedBy := b.c.now().Add(stuck) // the claim's expiry is at most this
	lim := b.c.st
	waitFor(t, "the slot renewed past its first expiry", func() bool {
		us, err := lim.LimitUsage(b.ctx, claimedBy.Add(10*time.Millisecond))
		return err == nil && len(us) == 1 && us[0].Scope == "queue:long" && us[0].Running == 1
	})
	if n := started.Load(); n != 1 {
		t.Errorf("%d jobs started under a queue concurrency of 1; want 1", n)
	}
	close(release)
	closed = true
	waitEvents(t, evs, 2)
}
