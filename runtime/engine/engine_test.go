package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/ratelimit"
	"github.com/queuemax/queuemax/runtime/scale"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// rig is an engine on a real SQLite store in t.TempDir() with a fixed
// clock, whose handler is run (nil: succeed).
type rig struct {
	t   *testing.T
	st  *sqlitestore.Store
	cfg Config
	now time.Time
	ran chan *store.Job
	run func(ctx context.Context, j *store.Job) (any, error)
	// hooks are the executor's hooks.
	hooks queuemaxtype.Hooks
}

// engine returns a new engine for r.cfg, whose executor runs every job
// with r.run (on r.cfg.Store, with r.hooks).
func (r *rig) engine() *Engine {
	cfg := r.cfg
	cfg.Exec = NewExecutor(ExecConfig{
		Store:      cfg.Store,
		Events:     NewEvents(slog.Default(), time.Now),
		Hooks:      r.hooks,
		MaxSnoozes: 5,
		RetryDelay: time.Second,
		Now:        cfg.Now,
		Handlers: map[string]*Handler{"": {Func: func(ctx context.Context, j *store.Job) (any, error) {
			r.ran <- j
			if r.run != nil {
				return r.run(ctx, j)
			}
			return nil, nil
		}}},
	})
	return New(cfg)
}

func newRig(t *testing.T, shards int) *rig {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{t: t, st: st, now: time.Now().Truncate(time.Second), ran: make(chan *store.Job, 1000)}
	r.cfg = Config{
		Store: st, WorkerID: "w1", Shards: shards, Workers: 4, ClaimBatch: 4,
		PollInterval: time.Millisecond, HeartbeatInterval: time.Second, RecoveryInterval: time.Second,
		DrainTimeout: time.Second, ShutdownGrace: time.Second,
		Breakers: map[string]breaker.Policy{"": {Threshold: 2, Timeout: time.Minute}},
		Now:      func() time.Time { return r.now },
	}
	return r
}

func (r *rig) enqueue(task string, prio store.Priority, n int) {
	r.t.Helper()
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = store.InsertParams{Task: task, Payload: json.RawMessage(`{}`), Priority: prio, MaxAttempts: 3, Now: r.now}
	}
	if _, err := r.st.Insert(r.t.Context(), ps); err != nil {
		r.t.Fatal(err)
	}
}

// pending counts ready jobs.
func (r *rig) counts() (pending, processing int64) {
	r.t.Helper()
	ss, err := r.st.Stats(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, s := range ss {
		pending += s.Pending
		processing += s.Processing
	}
	return pending, processing
}

// TestProducer_RunOnce claims as many jobs as there are free slots,
// highest priority first, runs them and acknowledges them.
func TestProducer_RunOnce(t *testing.T) {
	r := newRig(t, 1)
	r.enqueue("low", 0, 3)
	r.enqueue("high", 10, 3)
	e := r.engine()
	p := newProducer(e)
	n, _, err := p.RunOnce(t.Context(), r.now)
	if err != nil || n != 4 {
		t.Fatalf("RunOnce = %d, %v; want 4 jobs", n, err)
	}
	settle(e, -1)
	high := 0
	for range 4 {
		if j := <-r.ran; j.Task == "high" {
			high++
		}
	}
	if high != 3 {
		t.Errorf("ran %d high-priority jobs of the first 4, want 3", high)
	}
	if s := e.Stats(); s.Processed != 4 || s.Running != 0 || e.Active() != 0 {
		t.Errorf("stats %+v, active %d; want 4 processed, nothing running", s, e.Active())
	}
	if pending, processing := r.counts(); pending != 2 || processing != 0 {
		t.Errorf("pending %d, processing %d; want 2, 0", pending, processing)
	}
}

// TestProducer_RunOnceBreakerAndLimit leaves out a task whose breaker is
// open and a task whose rate limit has no token: no claim, no slot.
func TestProducer_RunOnceBreakerAndLimit(t *testing.T) {
	r := newRig(t, 1)
	// a's stored breaker is open: every process leaves a out.
	if _, err := r.st.BreakerUpdate(t.Context(), []string{"a"}, func(b *store.BreakerRow) bool {
		return breaker.Apply(b, breaker.Outcomes{Failures: 1, LastError: "timeout"}, breaker.Policy{Threshold: 1, Timeout: time.Minute}, r.now)
	}); err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(1, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.TryAcquire() // the only token
	r.cfg.Tasks = []string{"a", "b"}
	r.cfg.Breakers = map[string]breaker.Policy{"a": {Threshold: 1, Timeout: time.Minute}, "b": {Threshold: 5, Timeout: time.Minute}}
	r.cfg.TaskLimiters = map[string]*ratelimit.Limiter{"b": l}
	r.enqueue("a", 0, 2)
	r.enqueue("b", 0, 2)
	e := r.engine()
	n, retryIn, err := newProducer(e).RunOnce(t.Context(), r.now)
	if err != nil || n != 0 {
		t.Fatalf("RunOnce = %d, %v; want nothing claimed", n, err)
	}
	if retryIn <= 0 || retryIn > time.Hour {
		t.Errorf("retryIn = %v, want the time until a token or the probe", retryIn)
	}
	if w := e.RateLimitWaits()["b"]; w != 1 {
		t.Errorf("rate-limit waits of b = %d, want 1", w)
	}
	if pending, _ := r.counts(); pending != 4 {
		t.Errorf("pending %d, want 4", pending)
	}
}

// TestProducer_RunOnceLeaseLost: a job whose lease was taken back while
// it ran is not acknowledged and counts as lost.
func TestProducer_RunOnceLeaseLost(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Workers, r.cfg.ClaimBatch = 1, 1
	r.enqueue("t", 0, 1)
	e := r.engine()
	r.run = func(ctx context.Context, j *store.Job) (any, error) {
		e.mu.Lock()
		rj := e.running[j.ID]
		e.mu.Unlock()
		rj.lost.Store(true) // as the heartbeater does on ErrLeaseLost
		return nil, nil
	}
	if n, _, _ := newProducer(e).RunOnce(t.Context(), r.now); n != 1 {
		t.Fatalf("claimed %d, want 1", n)
	}
	settle(e, -1)
	if s := e.Stats(); s.LeaseLost != 1 || s.Processed != 0 {
		t.Errorf("lease lost %d, processed %d; want 1, 0", s.LeaseLost, s.Processed)
	}
}

// TestHeartbeater_RunOnce renews held jobs (so recovery leaves them) and
// cancels a job whose lease no longer holds.
func TestHeartbeater_RunOnce(t *testing.T) {
	r := newRig(t, 1)
	r.enqueue("t", 0, 2)
	jobs, err := r.st.Claim(t.Context(), store.ClaimParams{WorkerID: "w1", Max: 2, Now: r.now})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	e := r.engine()
	good := e.hold(jobs[0], false)
	stale := *jobs[1]
	stale.Lease++ // a lease this engine no longer holds
	bad := e.hold(&stale, false)
	h := &heartbeater{e: e}
	h.RunOnce(t.Context(), r.now) // the round at start does nothing
	r.now = r.now.Add(time.Hour)
	h.RunOnce(t.Context(), r.now)
	if !bad.lost.Load() || !errors.Is(context.Cause(bad.ctx), store.ErrLeaseLost) {
		t.Errorf("stale lease: lost %v, cause %v; want lost and cancelled", bad.lost.Load(), context.Cause(bad.ctx))
	}
	if good.lost.Load() || good.ctx.Err() != nil {
		t.Error("the held job was cancelled")
	}
	res, err := r.st.RecoverOrphans(t.Context(), r.now.Add(-time.Minute), r.now)
	if err != nil || res.Requeued+res.DeadLettered != 1 {
		t.Errorf("recover = %+v, %v; want only the job without heartbeats requeued", res, err)
	}
}

// TestRescuer_RunOnce renews this engine's leases before recovering, so
// only other workers' orphans are taken back.
func TestRescuer_RunOnce(t *testing.T) {
	r := newRig(t, 1)
	r.enqueue("t", 0, 2)
	mine, err := r.st.Claim(t.Context(), store.ClaimParams{WorkerID: "w1", Max: 1, Now: r.now})
	if err != nil || len(mine) != 1 {
		t.Fatal(mine, err)
	}
	if _, err := r.st.Claim(t.Context(), store.ClaimParams{WorkerID: "dead", Max: 1, Now: r.now}); err != nil {
		t.Fatal(err)
	}
	r.cfg.StuckTimeout = 30 * time.Second
	r.cfg.Wake = make(chan struct{}, 1)
	e := r.engine()
	e.hold(mine[0], false)
	r.now = r.now.Add(time.Hour)
	(&rescuer{e: e}).RunOnce(t.Context(), r.now)
	ss, err := r.st.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if waiting, processing := ss[0].Pending+ss[0].Scheduled, ss[0].Processing; waiting != 1 || processing != 1 {
		t.Errorf("waiting %d, processing %d; want the dead worker's job requeued and ours kept", waiting, processing)
	}
	select {
	case <-r.cfg.Wake:
	default:
		t.Error("the requeue did not wake the producer")
	}
}

// TestMaintenance_RunOnce cleans up at start and then once per
// CleanupInterval, and checks alerts every round (the alert itself on its
// rising edge).
func TestMaintenance_RunOnce(t *testing.T) {
	r := newRig(t, 1)
	ps := &pruneCounter{Store: r.st}
	r.cfg.Store = ps
	r.cfg.CleanupInterval, r.cfg.CleanupAge = time.Hour, 24*time.Hour
	events := NewEvents(slog.Default(), time.Now)
	alerts, cancel := events.Subscribe("test", []EventKind{queuemaxtype.EventAlert}, 10)
	defer cancel()
	r.cfg.Alerts = NewAlerts(ps, events, 0, r.cfg.Now, slog.Default())
	r.enqueue("t", 0, 1)
	m := &maintenance{e: r.engine()}
	for _, d := range []time.Duration{0, time.Minute, 59 * time.Minute, time.Hour, 90 * time.Minute} {
		m.RunOnce(t.Context(), r.now.Add(d))
	}
	if ps.n != 2 || ps.waiting != 5 || len(alerts) != 1 {
		t.Errorf("cleanups %d, alert checks %d, alerts %d; want 2, 5, 1", ps.n, ps.waiting, len(alerts))
	}
	want := PruneParams(r.now.Add(time.Hour), 0, 24*time.Hour) // the last round that cleaned up
	if ps.last != want {
		t.Errorf("last prune %+v, want %+v", ps.last, want)
	}
}

// pruneCounter counts Prune and WaitingCount calls.
type pruneCounter struct {
	store.Store
	n, waiting int
	last       store.PruneParams
}

func (s *pruneCounter) WaitingCount(ctx context.Context) (int64, error) {
	s.waiting++
	return s.Store.WaitingCount(ctx)
}

func (s *pruneCounter) Prune(ctx context.Context, p store.PruneParams) (store.CleanupResult, error) {
	s.n++
	s.last = p
	return s.Store.Prune(ctx, p)
}

// TestAutoscaler_RunOnce scales up by the backlog, then honours the
// cooldown.
func TestAutoscaler_RunOnce(t *testing.T) {
	r := newRig(t, 1)
	p := scale.Policy{Min: 1, Max: 8, UpThreshold: 10, DownThreshold: 2, CheckInterval: time.Second, Cooldown: time.Minute}.WithDefaults()
	r.cfg.Workers, r.cfg.Autoscale = 2, &p
	r.enqueue("t", 0, 30)
	e := r.engine()
	a := &autoscaler{e: e}
	a.RunOnce(t.Context(), r.now)
	if got := e.Stats().Concurrency; got != 5 {
		t.Fatalf("concurrency %d after a backlog of 30, want 2+30/10 = 5", got)
	}
	a.RunOnce(t.Context(), r.now.Add(time.Second)) // within the cooldown
	if got := e.Stats().Concurrency; got != 5 {
		t.Errorf("concurrency %d within the cooldown, want 5", got)
	}
}

type fakePeriodic struct {
	mu    sync.Mutex
	ticks []time.Time
	now   time.Time
}

func (f *fakePeriodic) Register(context.Context, time.Time) error { return nil }
func (f *fakePeriodic) Now() time.Time                            { return f.now }
func (f *fakePeriodic) Tick(_ context.Context, now time.Time) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ticks = append(f.ticks, now)
	return now.Add(time.Minute), nil
}

// TestScheduler_RunOnce returns the next slot the periodic scheduler
// named.
func TestScheduler_RunOnce(t *testing.T) {
	r := newRig(t, 1)
	f := &fakePeriodic{now: r.now}
	r.cfg.Periodic = f
	s := newScheduler(r.engine())
	if next := s.RunOnce(t.Context(), r.now); !next.Equal(r.now.Add(time.Minute)) {
		t.Errorf("next = %v, want a minute after %v", next, r.now)
	}
	if len(f.ticks) != 1 {
		t.Errorf("ticks = %v, want one", f.ticks)
	}
}

// TestEngine_RunDrain runs jobs, then on Stop cancels a job that outlives
// the drain and returns it to pending without spending its attempt.
func TestEngine_RunDrain(t *testing.T) {
	r := newRig(t, 2)
	r.cfg.Now = time.Now
	r.cfg.DrainTimeout = 50 * time.Millisecond
	var started atomic.Int32
	block := make(chan struct{})
	r.run = func(ctx context.Context, j *store.Job) (any, error) {
		if j.Task != "slow" {
			return nil, nil
		}
		started.Add(1)
		close(block)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	r.enqueue("fast", 0, 5)
	r.enqueue("slow", -1, 1)
	e := r.engine()
	done := make(chan struct{})
	go func() { e.Run(t.Context()); close(done) }()
	<-block
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().Processed < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	e.Stop()
	<-done
	if s := e.Stats(); s.State != Stopped || s.Processed != 5 || e.Active() != 0 {
		t.Errorf("stats %+v, active %d; want stopped, 5 processed, none held", s, e.Active())
	}
	jobs, err := r.st.Claim(t.Context(), store.ClaimParams{WorkerID: "w2", Max: 5, Now: time.Now()})
	if err != nil || len(jobs) != 1 || jobs[0].Task != "slow" || jobs[0].Attempts != 1 {
		t.Errorf("after the drain: %v, %v; want the slow job pending again, unspent", jobs, err)
	}
}

// settle runs up to n queued jobs (n < 0: all) on the calling goroutine,
// as the workers would, then flushes their acknowledgements.
func settle(e *Engine, n int) {
	for ; n != 0; n-- {
		select {
		case rj := <-e.queue:
			e.runJob(rj)
			continue
		default:
		}
		break
	}
	e.acks.RunOnce()
}

// TestProducer_RunOncePrefetch claims a whole ClaimBatch beyond the
// workers; the extra jobs wait in the queue, and a stop returns the ones
// still queued to pending unspent. The producer claims again only once
// the queue runs low.
func TestProducer_RunOncePrefetch(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Workers, r.cfg.ClaimBatch = 2, 6
	r.enqueue("t", 0, 8)
	e := r.engine()
	p := newProducer(e)
	if n, _, err := p.RunOnce(t.Context(), r.now); err != nil || n != 6 {
		t.Fatalf("RunOnce = %d, %v; want the whole batch of 6", n, err)
	}
	if s := e.Stats(); s.Prefetched != 6 || e.Active() != 6 {
		t.Fatalf("prefetched %d, active %d; want 6 held", s.Prefetched, e.Active())
	}
	if n, _, _ := p.RunOnce(t.Context(), r.now); n != 0 {
		t.Fatalf("a full queue claimed %d more, want 0", n)
	}
	if _, low := p.sizes(2); low != 4 {
		t.Errorf("low-water mark %d, want 2×Workers = 4", low)
	}
	settle(e, 4)
	p.releaseQueued()
	if s := e.Stats(); s.Processed != 4 || e.Active() != 0 || s.Prefetched != 0 {
		t.Errorf("processed %d, active %d, prefetched %d; want 4, 0, 0", s.Processed, e.Active(), s.Prefetched)
	}
	if pending, processing := r.counts(); pending != 4 || processing != 0 {
		t.Errorf("pending %d, processing %d; want 4 (2 released, 2 never claimed), 0", pending, processing)
	}
}

// TestProducer_AdaptClaimSize: with ClaimMax above ClaimBatch, full claims
// in quick succession double the claim size up to ClaimMax, slow ones
// halve it, and an empty claim resets it; the low-water mark follows.
func TestProducer_AdaptClaimSize(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Workers, r.cfg.ClaimBatch, r.cfg.ClaimMax = 2, 8, 50
	p := newProducer(r.engine())
	at := time.Now()
	p.adapt(8, 8, at) // the first full claim only sets the clock
	var sizes []int
	for range 4 {
		at = at.Add(time.Millisecond)
		capacity, _ := p.sizes(2)
		p.adapt(capacity, capacity, at)
		sizes = append(sizes, p.size)
	}
	if want := []int{16, 32, 50, 50}; !slices.Equal(sizes, want) {
		t.Errorf("sizes after fast full claims %v, want %v", sizes, want)
	}
	if capacity, low := p.sizes(2); capacity != 50 || low != 25 {
		t.Errorf("sizes(2) = %d, %d; want 50, 25 (claim again at half)", capacity, low)
	}
	p.adapt(50, 50, at.Add(time.Second))
	if p.size != 25 {
		t.Errorf("after a slow claim size %d, want 25", p.size)
	}
	p.adapt(25, 10, at.Add(time.Second+time.Millisecond))
	if p.size != 25 {
		t.Errorf("a partial claim changed the size to %d", p.size)
	}
	p.adapt(25, 0, at.Add(2*time.Second))
	if p.size != 8 {
		t.Errorf("after an empty claim size %d, want ClaimBatch 8", p.size)
	}
}

// cancelInFlight is a store whose first claim behaves like a PostgreSQL
// claim cancelled in flight: the run is stopped while the claim is on the
// server, the claim commits anyway, and a cancelled context then reports
// only its cancellation.
type cancelInFlight struct {
	store.Store
	stop func()
	once sync.Once
}

func (s *cancelInFlight) Claim(ctx context.Context, p store.ClaimParams) ([]*store.Job, error) {
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return s.Store.Claim(ctx, p)
	}
	s.stop()
	jobs, err := s.Store.Claim(context.WithoutCancel(ctx), p)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return jobs, err
}

// TestEngine_StopDuringClaim stops the engine while its first claim is in
// flight: the claim's jobs must end up pending again (released with the
// rest of the queue), not processing under a lease the engine dropped.
func TestEngine_StopDuringClaim(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Now = time.Now
	r.cfg.Workers, r.cfg.ClaimBatch = 2, 8
	r.run = func(ctx context.Context, j *store.Job) (any, error) {
		<-ctx.Done() // the drain cancels whatever started
		return nil, context.Cause(ctx)
	}
	r.enqueue("t", 0, 8)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r.cfg.Store = &cancelInFlight{Store: r.st, stop: cancel}
	r.cfg.DrainTimeout = 10 * time.Millisecond
	e := r.engine()
	e.Run(ctx)
	if pending, processing := r.counts(); pending != 8 || processing != 0 {
		t.Errorf("after a stop during the claim: %d pending, %d processing; want 8, 0", pending, processing)
	}
}

// hangingClaims is a store whose claims wait for their context's end.
type hangingClaims struct {
	store.Store
	entered chan struct{}
}

func (s *hangingClaims) Claim(ctx context.Context, p store.ClaimParams) ([]*store.Job, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestEngine_StopDuringHangingClaim stops the engine while a claim hangs
// (an unreachable server): Run returns once claimStopGrace has passed.
func TestEngine_StopDuringHangingClaim(t *testing.T) {
	defer func(g time.Duration) { claimStopGrace = g }(claimStopGrace)
	claimStopGrace = 10 * time.Millisecond
	r := newRig(t, 1)
	r.cfg.Now = time.Now
	r.enqueue("t", 0, 1)
	st := &hangingClaims{Store: r.st, entered: make(chan struct{}, 1)}
	r.cfg.Store = st
	ctx, cancel := context.WithCancel(t.Context())
	e := r.engine()
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	<-st.entered
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return while a claim hung")
	}
}
