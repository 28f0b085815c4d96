package admission

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// bundle is a Controller on a real SQLite store with a fixed clock, and
// the claim path a round uses (claimer).
type bundle struct {
	t     *testing.T
	st    store.Store
	now   time.Time
	limit atomic.Int64
	jobs  sync.WaitGroup
	c     *Controller
}

func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{t: t, st: st, now: time.Now().Truncate(time.Second)}
	b.limit.Store(4)
	cfg.Store, cfg.WorkerID = st, "w1"
	cfg.Now = func() time.Time { return b.now }
	if cfg.Breakers == nil {
		cfg.Breakers = map[string]breaker.Policy{"": {Threshold: 2, Timeout: time.Minute}}
	}
	b.c = New(cfg, Host{Limit: &b.limit, Executing: new(atomic.Int64), Jobs: &b.jobs,
		JobCtx: context.Background, Wake: func() {}, Out: discard{}})
	t.Cleanup(b.jobs.Wait)
	return b
}

func (b *bundle) enqueue(task string, n int) {
	b.t.Helper()
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = store.InsertParams{Task: task, Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: b.now}
	}
	if _, err := b.st.Insert(b.t.Context(), ps); err != nil {
		b.t.Fatal(err)
	}
}

// round runs one Round of up to n jobs and returns the jobs queued.
func (b *bundle) round(n int) []*store.Job {
	b.t.Helper()
	cl := &claimer{b: b}
	got, _, err := b.c.Round(b.t.Context(), n, b.now, cl)
	if err != nil || got != len(cl.queued) {
		b.t.Fatalf("Round = %d, %v; queued %d", got, err, len(cl.queued))
	}
	return cl.queued
}

// claimer is the engine's claim path reduced to the store's claim.
type claimer struct {
	b      *bundle
	queued []*store.Job
}

func (c *claimer) Claim(ctx context.Context, tasks []string, max int, now time.Time) ([]*store.Job, error) {
	return c.b.c.ClaimQueues(ctx, store.ClaimParams{WorkerID: "w1", Max: max, Now: now, Tasks: tasks, Order: c.Order()})
}
func (c *claimer) Order() []int                   { return []int{0} }
func (c *claimer) BeforeClaims(context.Context)   {}
func (c *claimer) Queue(j *store.Job, probe bool) { c.queued = append(c.queued, j) }
func (c *claimer) ReleaseQueued()                 {}

// discard is an outage log that drops everything.
type discard struct{}

func (discard) Fail(context.Context, slog.Level, string, string, error, ...any) {}
func (discard) OK(context.Context, string)                                      {}

// events records the events emitted.
type events struct {
	mu  sync.Mutex
	evs []queuemaxtype.Event
}

func (e *events) Emit(_ context.Context, ev queuemaxtype.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

// TestController_GlobalConcurrency: a round claims at most the task's
// global concurrency (with a rate, its slots are held from the claim); a
// job's End gives its slot back and the next round claims one more.
func TestController_GlobalConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Tasks: []string{"t"}, Breakers: map[string]breaker.Policy{"t": {}},
		GlobalLimits: map[string]store.LimitRule{"t": {Concurrency: 2, Rate: 100, Per: time.Second}}})
	b.enqueue("t", 5)
	jobs := b.round(4)
	if len(jobs) != 2 {
		t.Fatalf("first round claimed %d jobs; want the limit's 2", len(jobs))
	}
	for _, j := range jobs {
		if !b.c.Start(j, false) {
			t.Fatalf("Start(%d) = false; want it to start", j.ID)
		}
	}
	if got := b.round(4); len(got) != 0 {
		t.Fatalf("round at the limit claimed %d; want none", len(got))
	}
	b.c.End(jobs[0])
	b.jobs.Wait() // the slot goes back in the background
	if got := b.round(4); len(got) != 1 {
		t.Errorf("round after one End claimed %d; want 1", len(got))
	}
}

// TestController_BreakerHoldsStart: dependency failures recorded up to
// the threshold open the stored breaker (one closed → open event), a job
// claimed before it opened does not start, and the next round leaves the
// task out until a probe is due.
func TestController_BreakerHoldsStart(t *testing.T) {
	t.Parallel()
	ev := &events{}
	b := setup(t, Config{Events: ev})
	b.enqueue("t", 3)
	jobs := b.round(3)
	if len(jobs) != 3 {
		t.Fatalf("claimed %d; want 3", len(jobs))
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, j := range jobs[:2] {
		if !b.c.Start(j, false) {
			t.Fatalf("Start before the breaker opened = false")
		}
		b.c.End(j)
		b.c.Record(j, refused, false)
	}
	if b.c.Start(jobs[2], false) {
		t.Error("a job claimed before its breaker opened started once it was open")
	}
	if b.c.Start(jobs[2], true) != true {
		t.Error("the probe did not start")
	}
	bs, _ := b.c.BreakerStats()
	if bs[""].State != breaker.Open || bs[""].Failures != 2 {
		t.Errorf("breaker %+v; want open with 2 failures", bs[""])
	}
	ev.mu.Lock()
	if len(ev.evs) != 1 || ev.evs[0].Kind != queuemaxtype.EventCircuit || ev.evs[0].To != "open" {
		t.Errorf("events %+v; want one circuit_state_changed to open", ev.evs)
	}
	ev.mu.Unlock()
	b.enqueue("t", 1)
	if got := b.round(3); len(got) != 0 {
		t.Errorf("round with the breaker open claimed %d; want none", len(got))
	}
	if err := errors.New("bad input"); DependencyFailure(err) {
		t.Errorf("DependencyFailure(%v) = true; a plain error is the input's", err)
	}
}
