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

	"github.com/queuemax/queuemax/runtime/store"
)

// custArgs is a payload limited per customer.
type custArgs struct {
	Customer int `json:"customer"`
	N        int `json:"n"`
}

// keyedRows returns the keyed state rows of task in c's store.
func keyedRows(t *testing.T, c *Client, task string) []store.LimitUsage {
	t.Helper()
	us, err := c.st.LimitUsage(t.Context(), c.now())
	if err != nil {
		t.Fatal(err)
	}
	var out []store.LimitUsage
	for _, u := range us {
		if u.Scope == store.TaskScope(task) && u.Key != "" {
			out = append(out, u)
		}
	}
	return out
}

// testLimitByConcurrency: with global_concurrency=1 per customer, two
// clients: customer 1's first job holds its slot (its handler blocks on a
// channel) while customer 1's other jobs, enqueued first, wait, and the
// jobs of 10 other customers all run, never two of one customer at once.
// The waiting jobs say why in Held; once everything drained no per-key
// state is left in the store.
func testLimitByConcurrency(t *testing.T, cfg Config) {
	const task = "t.PerCustomer"
	release := make(chan struct{})
	var mu sync.Mutex
	running := make(map[int]int)
	most := make(map[int]int)
	started1 := 0
	h := Define(task, TaskOptions{GlobalConcurrency: 1, LimitBy: "customer"}, func(ctx context.Context, a custArgs) error {
		mu.Lock()
		running[a.Customer]++
		most[a.Customer] = max(most[a.Customer], running[a.Customer])
		if a.Customer == 1 {
			started1++
		}
		mu.Unlock()
		if a.Customer == 1 {
			<-release
		}
		mu.Lock()
		running[a.Customer]--
		mu.Unlock()
		return nil
	})
	cfg.Workers, cfg.Handlers = 4, []Handler{h}
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	var first []JobID
	for i := range 3 {
		id, err := a.c.Enqueue(a.ctx, task, custArgs{Customer: 1, N: i}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, id)
	}
	const others = 40
	for i := range others {
		if _, err := a.c.Enqueue(a.ctx, task, custArgs{Customer: 2 + i%10, N: i}, Opts{}); err != nil {
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
	done := 0
	timeout := time.After(60 * time.Second)
	for done < others {
		select {
		case <-evs:
		case <-evsB:
		case <-timeout:
			t.Fatalf("%d of the %d jobs of other customers completed while customer 1 is at its limit", done, others)
		}
		done++
	}
	mu.Lock()
	if started1 != 1 {
		t.Errorf("%d jobs of customer 1 started; want 1 (its limit)", started1)
	}
	for c, m := range most {
		if m > 1 {
			t.Errorf("customer %d: %d jobs ran at once; want at most 1", c, m)
		}
	}
	mu.Unlock()
	const want = "global concurrency of task t.PerCustomer reached for customer=1 (1/1 running)"
	waiting := 0
	for _, id := range first {
		j, err := a.c.Job(a.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == StatusPending {
			waiting++
			if j.Held != want || j.Attempts != 0 {
				t.Errorf("job %d: Held %q, attempts %d; want %q, 0", id, j.Held, j.Attempts, want)
			}
		}
	}
	if waiting != 2 {
		t.Errorf("%d jobs of customer 1 pending; want 2", waiting)
	}
	s, err := b.c.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GlobalLimits) != 1 || s.GlobalLimits[0].By != "customer" || s.GlobalLimits[0].Keys < 1 || s.GlobalLimits[0].Running != 1 {
		t.Errorf("Stats.GlobalLimits = %+v; want t.PerCustomer per customer, at least one key, the busiest running 1", s.GlobalLimits)
	} else if got, want := s.GlobalLimits[0].String(), "running 1/1"; !strings.Contains(got, want) || !strings.Contains(got, "per customer") {
		t.Errorf("String = %q; want it to say per customer and %q", got, want)
	}
	close(release)
	closed = true
	for done < others+3 {
		select {
		case <-evs:
		case <-evsB:
		case <-timeout:
			t.Fatalf("%d of %d jobs completed", done, others+3)
		}
		done++
	}
	mu.Lock()
	if most[1] != 1 {
		t.Errorf("customer 1: %d jobs ran at once; want 1", most[1])
	}
	mu.Unlock()
	waitFor(t, "no per-key state left", func() bool { return len(keyedRows(t, a.c, task)) == 0 })
}

func TestLimitBy_Concurrency(t *testing.T) {
	t.Parallel()
	testLimitByConcurrency(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_LimitBy_Concurrency(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testLimitByConcurrency(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// testLimitByManyKeys: 1,000 distinct keys (and jobs without the key,
// which share one) all run under a per-key concurrency of 1, and no
// per-key state is left once they drained.
func testLimitByManyKeys(t *testing.T, cfg Config) {
	const task = "t.ManyKeys"
	h := Define(task, TaskOptions{GlobalConcurrency: 1, LimitBy: "customer"}, func(ctx context.Context, a map[string]any) error {
		return nil
	})
	cfg.Workers, cfg.Handlers = 8, []Handler{h}
	b := setup(t, cfg)
	n := 1000
	if raceEnabled {
		n = 300
	}
	batch := make([]EnqueueParams, 0, n+5)
	for i := range n {
		batch = append(batch, EnqueueParams{Task: task, Payload: map[string]any{"customer": fmt.Sprint("c", i)}})
	}
	for range 5 {
		batch = append(batch, EnqueueParams{Task: task, Payload: map[string]any{"other": 1}})
	}
	if _, err := b.c.EnqueueMany(b.ctx, batch); err != nil {
		t.Fatal(err)
	}
	evs := collect(b.c, EventCompleted)
	run(t, b.c)
	waitEvents(t, evs, len(batch))
	waitFor(t, "no per-key state left", func() bool { return len(keyedRows(t, b.c, task)) == 0 })
}

func TestLimitBy_ManyKeys(t *testing.T) {
	t.Parallel()
	testLimitByManyKeys(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_LimitBy_ManyKeys(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testLimitByManyKeys(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// testLimitByRate: a global rate of 5 an hour per customer lets two
// customers start 5 jobs each at once; the sixth of each waits for a token
// and says so.
func testLimitByRate(t *testing.T, cfg Config) {
	const task = "t.RatedPerKey"
	var mu sync.Mutex
	starts := make(map[int][]time.Time)
	h := Define(task, TaskOptions{GlobalRateLimit: Rate{Limit: 5, Per: time.Hour}, LimitBy: "customer"}, func(ctx context.Context, a custArgs) error {
		mu.Lock()
		starts[a.Customer] = append(starts[a.Customer], time.Now())
		mu.Unlock()
		return nil
	})
	cfg.Workers, cfg.Handlers = 4, []Handler{h}
	b := setup(t, cfg)
	var ids []JobID
	for i := range 12 {
		id, err := b.c.Enqueue(b.ctx, task, custArgs{Customer: i % 2, N: i}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	evs := collect(b.c, EventCompleted)
	run(t, b.c)
	waitEvents(t, evs, 10)
	pending, err := b.c.Jobs(b.ctx, ListParams{Status: StatusPending})
	if err != nil || len(pending) != 2 {
		t.Fatalf("Jobs(pending) = %d, %v; want 2 (one per customer, waiting for the rate)", len(pending), err)
	}
	for _, j := range pending {
		var a custArgs
		_ = json.Unmarshal(j.Payload, &a)
		want := fmt.Sprintf("global rate limit of task %s reached for customer=%d (5/5 started in the last 1h0m0s)", task, a.Customer)
		if j.Held != want {
			t.Errorf("job %d Held = %q; want %q", j.ID, j.Held, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts[0]) != 5 || len(starts[1]) != 5 {
		t.Errorf("starts per customer: %d, %d; want 5, 5", len(starts[0]), len(starts[1]))
	}
}

func TestLimitBy_Rate(t *testing.T) {
	t.Parallel()
	testLimitByRate(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_LimitBy_Rate(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testLimitByRate(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// TestLimitBy_Invalid: limit_by without a global limit, or not a key
// name, is a clear error at Open.
func TestLimitBy_Invalid(t *testing.T) {
	t.Parallel()
	for _, o := range []TaskOptions{
		{LimitBy: "customer"},
		{GlobalConcurrency: 1, LimitBy: "a.b"},
		{GlobalConcurrency: 1, LimitBy: `x"y`},
	} {
		h := Define("t.Bad", o, func(context.Context, echoArgs) error { return nil })
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}})
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Open with %+v = %v; want ErrInvalidConfig and ErrInvalidLimit", o, err)
		}
	}
}
