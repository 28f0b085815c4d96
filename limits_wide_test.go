package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// testWideAndKeyConcurrency: "at most 3 at once, 1 per customer" over two
// clients of 4 workers each: 8 customers' jobs never run more than 3 at
// once in all, nor 2 of one customer at once; while customer 0's first
// job holds its slots, Stats lists the task-wide limit and the per-key
// one; once drained, no slot is held and no per-key state is left.
func testWideAndKeyConcurrency(t *testing.T, cfg Config) {
	const task = "t.WideAndKey"
	var mu sync.Mutex
	var spans []span
	perCust := make(map[int][]span)
	var holding sync.Once
	held := make(chan struct{})
	release := make(chan struct{})
	h := Define(task, TaskOptions{GlobalConcurrency: 3, KeyConcurrency: 1, LimitBy: "customer"}, func(ctx context.Context, a custArgs) error {
		s := span{start: time.Now()}
		if a.Customer == 0 && a.N == 0 {
			holding.Do(func() { close(held) })
			<-release
		} else {
			time.Sleep(3 * time.Millisecond) // the job's work
		}
		s.end = time.Now()
		mu.Lock()
		spans = append(spans, s)
		perCust[a.Customer] = append(perCust[a.Customer], s)
		mu.Unlock()
		return nil
	})
	cfg.Workers, cfg.Handlers = 4, []Handler{h}
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	const custs, each = 8, 5
	var batch []EnqueueParams
	for i := range each {
		for c := range custs {
			batch = append(batch, EnqueueParams{Task: task, Payload: custArgs{Customer: c, N: i}})
		}
	}
	if _, err := a.c.EnqueueMany(a.ctx, batch); err != nil {
		t.Fatal(err)
	}
	evs := collect(a.c, EventCompleted)
	evsB := collect(b.c, EventCompleted)
	run(t, a.c)
	run(t, b.c)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("customer 0's first job did not start")
	}
	s, err := a.c.Stats(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wide, key *GlobalLimitInfo
	for i, g := range s.GlobalLimits {
		switch {
		case g.Name == task && g.By == "":
			wide = &s.GlobalLimits[i]
		case g.Name == task && g.By == "customer":
			key = &s.GlobalLimits[i]
		}
	}
	if wide == nil || key == nil || wide.Concurrency != 3 || key.Concurrency != 1 || wide.Running < 1 || key.Running != 1 {
		t.Errorf("Stats.GlobalLimits = %+v; want %s with concurrency 3 over all keys (1+ running) and 1 per customer (1 running)", s.GlobalLimits, task)
	}
	close(release)
	timeout := time.After(60 * time.Second)
	for done := 0; done < custs*each; done++ {
		select {
		case <-evs:
		case <-evsB:
		case <-timeout:
			t.Fatalf("%d of %d jobs completed", done, custs*each)
		}
	}
	mu.Lock()
	if m := maxOverlap(spans); m > 3 {
		t.Errorf("%d jobs ran at once; want at most the task-wide 3", m)
	}
	for c, ss := range perCust {
		if m := maxOverlap(ss); m > 1 {
			t.Errorf("customer %d: %d jobs ran at once; want at most 1", c, m)
		}
	}
	mu.Unlock()
	waitFor(t, "every slot back and no per-key state", func() bool {
		s, err := a.c.Stats(a.ctx)
		if err != nil {
			return false
		}
		for _, g := range s.GlobalLimits {
			if g.Name == task && (g.Running != 0 || g.Slots != 0) {
				return false
			}
		}
		return len(keyedRows(t, a.c, task)) == 0
	})
}

func TestWideAndKeyLimits_Concurrency(t *testing.T) {
	t.Parallel()
	testWideAndKeyConcurrency(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_WideAndKeyLimits_Concurrency(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testWideAndKeyConcurrency(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// testWideAndKeyRate: 6 an hour for the task, 2 an hour per customer,
// over two clients: of 4 customers' 3 jobs each, exactly 6 start, at
// most 2 of a customer; each waiting job says which limit holds it.
func testWideAndKeyRate(t *testing.T, cfg Config) {
	const task = "t.WideAndKeyRate"
	var mu sync.Mutex
	starts := make(map[int]int)
	h := Define(task, TaskOptions{GlobalRateLimit: Rate{Limit: 6, Per: time.Hour}, KeyRateLimit: Rate{Limit: 2, Per: time.Hour},
		LimitBy: "customer"}, func(ctx context.Context, a custArgs) error {
		mu.Lock()
		starts[a.Customer]++
		mu.Unlock()
		return nil
	})
	cfg.Workers, cfg.Handlers = 4, []Handler{h}
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	for i := range 12 {
		if _, err := a.c.Enqueue(a.ctx, task, custArgs{Customer: i % 4, N: i}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	evs := collect(a.c, EventCompleted)
	evsB := collect(b.c, EventCompleted)
	run(t, a.c)
	run(t, b.c)
	timeout := time.After(30 * time.Second)
	for done := 0; done < 6; done++ {
		select {
		case <-evs:
		case <-evsB:
		case <-timeout:
			t.Fatalf("%d of 6 jobs completed", done)
		}
	}
	// Both clients go on claiming: none of the 6 others may start.
	waits := func(c *Client) int64 {
		if w := c.engine.Load(); w != nil {
			return w.GlobalLimitWaits()[task]
		}
		return 0
	}
	wa, wb := waits(a.c), waits(b.c)
	waitFor(t, "two more claim rounds of each client left out by the limits", func() bool {
		return waits(a.c) >= wa+2 && waits(b.c) >= wb+2
	})
	pending, err := a.c.Jobs(a.ctx, ListParams{Status: StatusPending})
	if err != nil || len(pending) != 6 {
		t.Fatalf("Jobs(pending) = %d, %v; want 6", len(pending), err)
	}
	for _, j := range pending {
		var c custArgs
		_ = json.Unmarshal(j.Payload, &c)
		wideWhy := fmt.Sprintf("global rate limit of task %s reached (6/6 started in the last 1h0m0s)", task)
		keyWhy := fmt.Sprintf("global rate limit of task %s reached for customer=%d (2/2 started in the last 1h0m0s)", task, c.Customer)
		if j.Held != wideWhy && j.Held != keyWhy {
			t.Errorf("job %d Held = %q; want %q or %q", j.ID, j.Held, wideWhy, keyWhy)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for c, n := range starts {
		total += n
		if n > 2 {
			t.Errorf("customer %d started %d jobs; want at most 2", c, n)
		}
	}
	if total != 6 {
		t.Errorf("%d jobs started; want 6 (the task-wide rate)", total)
	}
}

func TestWideAndKeyLimits_Rate(t *testing.T) {
	t.Parallel()
	testWideAndKeyRate(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_WideAndKeyLimits_Rate(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testWideAndKeyRate(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// TestWideAndKeyLimits_Invalid: Key limits without LimitBy, or invalid,
// are a clear error at Open.
func TestWideAndKeyLimits_Invalid(t *testing.T) {
	t.Parallel()
	for _, o := range []TaskOptions{
		{KeyConcurrency: 1},
		{KeyRateLimit: Rate{Limit: 1, Per: time.Second}},
		{KeyConcurrency: -1, LimitBy: "customer"},
		{KeyRateLimit: Rate{Limit: 1}, LimitBy: "customer"},
	} {
		h := Define("t.Bad", o, func(context.Context, echoArgs) error { return nil })
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}})
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Open with %+v = %v; want ErrInvalidConfig and ErrInvalidLimit", o, err)
		} else if !strings.Contains(err.Error(), "t.Bad") {
			t.Errorf("Open with %+v = %v; want the handler named", o, err)
		}
	}
}
