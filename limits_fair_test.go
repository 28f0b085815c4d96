package queuemax

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testLimitByBacklog is the head-of-line case of a per-key limit: 600
// ready jobs of customer 1 (limit 1 per customer; its first job holds
// the slot until the test ends), then one job of customer 2 on the same
// shard. Customer 2's job must start while customer 1 has started only
// its first: within a claim round, however deep customer 1's backlog.
func testLimitByBacklog(t *testing.T, cfg Config) {
	const task = "t.Backlog"
	release := make(chan struct{})
	defer close(release)
	var started1 atomic.Int64
	done2 := make(chan int64, 1)
	h := Define(task, TaskOptions{GlobalConcurrency: 1, LimitBy: "customer"}, func(ctx context.Context, a custArgs) error {
		if a.Customer == 1 {
			started1.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
		done2 <- started1.Load()
		return nil
	})
	cfg.Workers, cfg.Handlers = 4, []Handler{h}
	b := setup(t, cfg)
	batch := make([]EnqueueParams, 0, 600)
	for i := range 600 {
		batch = append(batch, EnqueueParams{Task: task, Payload: custArgs{Customer: 1, N: i}})
	}
	if _, err := b.c.EnqueueMany(b.ctx, batch); err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Enqueue(b.ctx, task, custArgs{Customer: 2}, Opts{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run(t, b.c)
	select {
	case n := <-done2:
		t.Logf("customer 2's job ran %v after Run started", time.Since(start).Round(time.Millisecond))
		if n > 1 {
			t.Errorf("customer 2's job ran after %d jobs of customer 1 started; want at most 1 (its limit)", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("customer 2's job did not run in 30 s behind customer 1's backlog (%d of customer 1's jobs started)", started1.Load())
	}
}

func TestLimitBy_Backlog(t *testing.T) {
	t.Parallel()
	testLimitByBacklog(t, Config{Dir: t.TempDir(), Shards: 1})
}

func TestPostgres_LimitBy_Backlog(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testLimitByBacklog(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// testLimitByManyKeysAtLimit: 10,000 customers (2,000 under the race
// detector) spent their rate (1 an hour; taken in the store as an
// earlier process did) and have one job waiting each; a job of a new
// customer enqueued behind that backlog must start promptly (within a
// claim round; the test allows 10 s on a loaded machine), and none of
// the waiting jobs may start.
func testLimitByManyKeysAtLimit(t *testing.T, cfg Config) {
	const task = "t.ManyAtLimit"
	n := 10_000
	if raceEnabled {
		n = 2_000
	}
	var mu sync.Mutex
	starts := make(map[int]int)
	rate := Rate{Limit: 1, Per: time.Hour}
	h := Define(task, TaskOptions{GlobalRateLimit: rate, LimitBy: "customer"}, func(ctx context.Context, a custArgs) error {
		mu.Lock()
		starts[a.Customer]++
		mu.Unlock()
		return nil
	})
	cfg.Workers, cfg.Handlers = 8, []Handler{h}
	b := setup(t, cfg)
	batch := make([]EnqueueParams, 0, n)
	takes := make([]store.LimitTake, 0, n)
	rule := store.LimitRule{Rate: rate.Limit, Per: rate.Per}
	for c := range n {
		batch = append(batch, EnqueueParams{Task: task, Payload: custArgs{Customer: c}})
		takes = append(takes, store.LimitTake{Scope: store.TaskScope(task), Key: fmt.Sprintf("customer=%d", c), Rule: rule, Want: 1})
	}
	now := b.c.now()
	if g, err := b.c.st.LimitTake(b.ctx, "earlier", takes, now, now.Add(time.Hour)); err != nil || g[n-1].N != 1 {
		t.Fatalf("LimitTake of every customer's token: %v", err)
	}
	if _, err := b.c.EnqueueMany(b.ctx, batch); err != nil {
		t.Fatal(err)
	}
	// The new customer's key sorts after every other ("99999" > "9999"):
	// a walk of the keys passes all of them before it.
	const newCust = 99_999
	if _, err := b.c.Enqueue(b.ctx, task, custArgs{Customer: newCust}, Opts{}); err != nil {
		t.Fatal(err)
	}
	evs := collect(b.c, EventCompleted)
	start := time.Now()
	run(t, b.c)
	select {
	case <-evs:
		t.Logf("the new customer's job ran %v after Run started, behind %d jobs of %d customers at their limit",
			time.Since(start).Round(time.Millisecond), n, n)
	case <-time.After(10 * time.Second):
		t.Fatalf("the new customer's job did not run in 10 s behind %d customers at their limit", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 1 || starts[newCust] != 1 {
		t.Errorf("starts per customer = %v; want only the new customer's job", starts)
	}
}

func TestLimitBy_ManyKeysAtLimit(t *testing.T) {
	t.Parallel()
	testLimitByManyKeysAtLimit(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_LimitBy_ManyKeysAtLimit(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testLimitByManyKeysAtLimit(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}
