package queuemax

// The PostgreSQL store's end-to-end cases of the global, per-key and
// queue limits, through the API. The engine's behaviour under these limits
// is tested in runtime/engine on SQLite (limits_*_live_test.go); these
// run the same scenarios on a client over the PostgreSQL store, which the
// core module does not link in: queuemaxpg's TestOverlaid runs them (see
// queuemaxpg/overlay_test.go), and a plain go test of this package skips
// them, saying why (pgTestDSN).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
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
	bound := 10 * time.Second
	if raceEnabled {
		bound = 30 * time.Second // as the SQLite case's in runtime/engine under the race detector
	}
	select {
	case <-evs:
		t.Logf("the new customer's job ran %v after Run started, behind %d jobs of %d customers at their limit",
			time.Since(start).Round(time.Millisecond), n, n)
	case <-time.After(bound):
		t.Fatalf("the new customer's job did not run in %v behind %d customers at their limit", bound, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 1 || starts[newCust] != 1 {
		t.Errorf("starts per customer = %v; want only the new customer's job", starts)
	}
}

func TestPostgres_LimitBy_ManyKeysAtLimit(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testLimitByManyKeysAtLimit(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
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

func TestPostgres_LimitBy_Rate(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testLimitByRate(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
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
			if !o.Start.After(s.Start) && o.End.After(s.Start) {
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

func TestPostgres_QueueLimitsConcurrency(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testQueueConcurrency(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
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
		s := span{Start: time.Now()}
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
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
		s := span{Start: time.Now()}
		if a.Customer == 0 && a.N == 0 {
			holding.Do(func() { close(held) })
			<-release
		} else {
			time.Sleep(3 * time.Millisecond) // the job's work
		}
		s.End = time.Now()
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

func TestPostgres_WideAndKeyLimits_Rate(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testWideAndKeyRate(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}
