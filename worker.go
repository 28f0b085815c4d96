package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/ratelimit"
	"github.com/queuemax/queuemax/runtime/scale"
	"github.com/queuemax/queuemax/runtime/store"
)

// errStopping is the cancellation cause of a drain.
var errStopping = errors.New("queuemax: client stopping")

// Hooks are optional callbacks around each job Run executes. They run on the
// job's goroutine; a panicking hook is recovered and logged. Hooks are the
// simple form of a WorkMiddleware (Config.Middleware): OnStart runs before
// the middleware chain, and OnComplete and OnError run after the outcome has
// been recorded, which a middleware, returning before that, cannot see.
type Hooks struct {
	// OnStart runs before the handler.
	OnStart func(ctx context.Context, job *Job)
	// OnComplete runs after a success has been committed.
	OnComplete func(ctx context.Context, job *Job, result any)
	// OnError runs after a failure has been recorded.
	OnError func(ctx context.Context, job *Job, err error, out FailOutcome)
}

// Autoscale makes Run vary how many jobs it executes at once between Min and
// Max by the pending backlog, with queue-max's rule: above UpThreshold add
// max(1, pending/UpThreshold) workers, below DownThreshold remove one,
// checking every CheckInterval and acting at most once per Cooldown. Zero
// fields mean Min 1, Max 10, UpThreshold 100, DownThreshold 10,
// CheckInterval 60s and Cooldown 30s. See scale.Policy
// (go doc github.com/queuemax/queuemax/runtime/scale.Policy) for its fields
// and methods.
type Autoscale = scale.Policy

// WorkerState is the state of Run's engine.
type WorkerState string

// Worker states.
const (
	WorkerIdle     WorkerState = "initialized"
	WorkerRunning  WorkerState = "running"
	WorkerStopping WorkerState = "stopping"
	WorkerStopped  WorkerState = "stopped"
)

// WorkerStats describes the engine of a running (or stopped) Run.
type WorkerStats struct {
	WorkerID          string        `json:"worker_id"`
	State             WorkerState   `json:"state"`
	Concurrency       int           `json:"concurrency"` // current worker count (changes with autoscaling)
	Running           int           `json:"running"`     // jobs whose handler is executing now
	Prefetched        int           `json:"prefetched"`  // claimed jobs waiting for a free worker (ClaimBatch > Workers)
	Processed         int64         `json:"processed"`   // completed
	Failed            int64         `json:"failed"`      // dead-lettered
	Retried           int64         `json:"retried"`     // failed attempts that will retry
	LeaseLost         int64         `json:"lease_lost"`  // acknowledgements rejected because the job was taken back
	StartedAt         time.Time     `json:"started_at"`
	Uptime            time.Duration `json:"-"`
	UptimeSeconds     float64       `json:"uptime_seconds"`
	ThroughputPerHour float64       `json:"throughput_jobs_per_hour"` // processed per wall-clock hour of uptime
	CurrentJobs       []JobID       `json:"current_jobs,omitempty"`   // executing or prefetched
}

type runningJob struct {
	job    *Job
	ctx    context.Context // the job's context, a child of engine.jobCtx
	cancel context.CancelCauseFunc
	lost   atomic.Bool
	freed  atomic.Bool // its worker slot was given back
	// batch collects the acknowledgements of the jobs started with this
	// one from the same claim and shard (nil: acknowledged alone); queued
	// is set, on the job's goroutine, once its ack joined the batch.
	batch  *ackBatch
	queued bool
}

// engine is the state of one Run.
type engine struct {
	c        *Client
	log      *slog.Logger
	limiter  *ratelimit.Limiter
	limiters map[string]*ratelimit.Limiter // per task
	// rlWaits counts, per task with a limiter, the claim rounds that left
	// the task out because its bucket was empty (for RateLimitWaits).
	rlWaits map[string]*atomic.Int64
	// breakers holds one circuit breaker per task, so that one failing
	// downstream does not stop unrelated tasks. With a catch-all handler
	// (name "") there is a single breaker under "".
	breakers map[string]*breaker.Breaker
	order    []string // breaker names, sorted, for a stable claim plan
	auto     *scale.Policy

	limit  atomic.Int64 // how many jobs may run at once
	active atomic.Int64 // jobs started and not yet acknowledged
	// executing counts jobs whose handler has not returned yet: the slots
	// limit bounds. A job frees its slot when its handler returns, so the
	// fetcher can claim while the acknowledgement commits.
	executing atomic.Int64
	slotFree  chan struct{} // buffer 1: a freed slot wakes the fetcher

	// sticky is the shard the last claim filled its batch from (-1: none)
	// and streak how many claims in a row did; only fetch uses them.
	sticky, streak int
	regKey         string          // the worker registry row (registry.go)
	warned         map[string]bool // tasks warnUnhandled reported (maintenance only)

	mu      sync.Mutex
	running map[JobID]*runningJob

	state                               atomic.Value // WorkerState
	started                             time.Time
	processed, failed, retried, lostCnt atomic.Int64

	jobCtx     context.Context // parent of job contexts; outlives Run's ctx
	cancelJobs context.CancelCauseFunc
	jobWG      sync.WaitGroup
	stop       context.CancelFunc // ends Run's claiming (Stop)
	done       chan struct{}      // closed when Run returns
	// abort, closed by a Stop whose ctx ended, cuts the drain short.
	abort     chan struct{}
	abortOnce sync.Once
}

// ShutdownGrace is how long Run waits, after the drain ends and running
// jobs' contexts are cancelled, for their handlers to return. A handler
// still running then ignores cancellation: Run abandons it and returns. Its
// job is not lost: with no heartbeats its lease lapses after
// Config.StuckTimeout and orphan recovery (of any process) runs it again.
// Run therefore returns within DrainTimeout + ShutdownGrace of its
// context ending, plus the time to release unfinished jobs.
const ShutdownGrace = 2 * time.Second

func (c *Client) newEngine(jobCtx context.Context) (*engine, error) {
	e := &engine{
		c:        c,
		log:      c.log,
		limiters: make(map[string]*ratelimit.Limiter),
		rlWaits:  make(map[string]*atomic.Int64),
		slotFree: make(chan struct{}, 1),
		running:  make(map[JobID]*runningJob),
		started:  c.now(),
		jobCtx:   jobCtx,
		sticky:   -1,
	}
	e.state.Store(WorkerRunning)
	e.limit.Store(int64(c.cfg.Workers))
	if r := c.cfg.RateLimit; r.Limit > 0 {
		l, err := ratelimit.New(r.Limit, r.Per, 0)
		if err != nil {
			return nil, &ConfigError{"RateLimit", err.Error()}
		}
		e.limiter = l
	}
	for name, h := range c.handlers {
		if r := h.Options.RateLimit; r.Limit > 0 {
			l, err := ratelimit.New(r.Limit, r.Per, 0)
			if err != nil {
				return nil, fmt.Errorf("%w: handler %q: %v", ErrInvalidConfig, name, err)
			}
			e.limiters[name] = l
			e.rlWaits[name] = new(atomic.Int64)
		}
	}
	e.breakers = make(map[string]*breaker.Breaker)
	names := c.names
	if names == nil {
		names = []string{""}
	}
	for _, name := range names {
		threshold := c.cfg.CircuitThreshold
		if h := c.handlers[name]; threshold < 0 || (h != nil && h.Options.CircuitOff) {
			threshold = math.MaxInt // off: never opens
		}
		b, err := breaker.New(breaker.Config{
			Threshold: threshold,
			Timeout:   c.cfg.CircuitTimeout,
			OnStateChange: func(from, to breaker.State) {
				c.log.Warn("circuit breaker changed state", "task", name, "from", from.String(), "to", to.String())
				c.emit(context.Background(), Event{Kind: EventCircuit, Task: name, From: from.String(), To: to.String()})
			},
		})
		if err != nil {
			return nil, &ConfigError{"CircuitThreshold", err.Error()}
		}
		e.breakers[name] = b
		e.order = append(e.order, name)
	}
	slices.Sort(e.order)
	if c.cfg.Autoscale != nil {
		p := c.cfg.Autoscale.WithDefaults()
		if err := p.Validate(); err != nil {
			return nil, &ConfigError{"Autoscale", err.Error()}
		}
		e.auto = &p
		e.limit.Store(int64(max(p.Min, min(p.Max, c.cfg.Workers))))
	}
	return e, nil
}

// Run processes jobs until ctx ends, then drains: it stops claiming, lets
// running jobs finish for up to Config.DrainTimeout, cancels the rest and
// returns them to pending without spending an attempt; a handler that
// ignores cancellation for ShutdownGrace more is abandoned (its job runs
// again once its lease lapses), so Run returns within DrainTimeout plus
// ShutdownGrace. While it runs it
// renews running jobs' heartbeats, recovers orphans every
// Config.RecoveryInterval, deletes jobs older than Config.CleanupAge every
// hour and raises alerts. It returns nil after a drain caused by ctx, and
// only after every goroutine it started has exited. Only one Run may be
// active per Client (ErrRunning).
func (c *Client) Run(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.cfg.ReadOnly {
		return ErrReadOnly
	}
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)

	jobCtx, cancelJobs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelJobs(errStopping)
	e, err := c.newEngine(jobCtx)
	if err != nil {
		return err
	}
	sched, err := c.newScheduler()
	if err != nil {
		return err
	}
	ctx, e.stop = context.WithCancel(ctx)
	defer e.stop()
	e.cancelJobs = cancelJobs
	e.done = make(chan struct{})
	e.abort = make(chan struct{})
	defer close(e.done)
	c.engine.Store(e)
	c.log.InfoContext(ctx, "queuemax started", "worker_id", c.cfg.WorkerID, "shards", c.cfg.Shards,
		"workers", e.limit.Load(), "tasks", len(c.handlers))

	// Services that keep running during the drain stop with svcCtx.
	svcCtx, stopSvc := context.WithCancelCause(context.WithoutCancel(ctx))
	var svc sync.WaitGroup
	e.registerFirst(ctx)
	svc.Go(func() { e.heartbeats(svcCtx) })
	svc.Go(func() { e.registry(svcCtx) })
	svc.Go(func() { e.maintenance(svcCtx) })
	if e.auto != nil {
		svc.Go(func() { e.autoscale(svcCtx) })
	}
	var fetch sync.WaitGroup
	fetch.Go(func() { e.fetch(ctx) })
	fetch.Go(func() { // periodic tasks; stops with claiming
		if err := sched.run(ctx); err != nil {
			c.log.ErrorContext(ctx, "periodic scheduler stopped", "err", err)
		}
	})

	<-ctx.Done()
	e.state.Store(WorkerStopping)
	fetch.Wait()
	c.log.InfoContext(jobCtx, "queuemax draining", "running", e.active.Load(), "drain_timeout", c.cfg.DrainTimeout)
	drained := make(chan struct{})
	go func() { e.jobWG.Wait(); close(drained) }()
	timer := time.NewTimer(c.cfg.DrainTimeout)
	select {
	case <-drained:
		timer.Stop()
	case <-timer.C:
		c.log.WarnContext(jobCtx, "drain timeout: cancelling running jobs", "running", e.active.Load())
		e.cancelRunning(drained)
	case <-e.abort:
		timer.Stop()
		c.log.WarnContext(jobCtx, "stop deadline: cancelling running jobs", "running", e.active.Load())
		e.cancelRunning(drained)
	}
	stopSvc(errStopping)
	svc.Wait()
	e.state.Store(WorkerStopped)
	c.log.InfoContext(jobCtx, "queuemax stopped", "processed", e.processed.Load(), "failed", e.failed.Load(), "retried", e.retried.Load())
	return nil
}

// cancelRunning cancels the running jobs' contexts and waits up to
// ShutdownGrace for their handlers to return (drained closes); handlers that
// ignore cancellation are abandoned to their lapsing leases.
func (e *engine) cancelRunning(drained <-chan struct{}) {
	e.cancelJobs(errStopping)
	grace := time.NewTimer(ShutdownGrace)
	defer grace.Stop()
	select {
	case <-drained:
	case <-grace.C:
		e.mu.Lock()
		ids := make([]int64, 0, len(e.running))
		for id := range e.running {
			ids = append(ids, int64(id))
		}
		e.mu.Unlock()
		e.log.Error("abandoning jobs whose handlers ignore cancellation; their leases lapse after the stuck timeout and they run again",
			"jobs", ids, "grace", ShutdownGrace)
	}
}

// Stop stops the running Run: it stops claiming and lets running jobs
// finish until ctx ends (or Config.DrainTimeout passes); then their
// contexts are cancelled and unfinished jobs return to pending. It returns
// nil when Run has returned, or ctx's error as soon as ctx ends, even if a
// handler ignores cancellation: Run then finishes shutting down in the
// background within ShutdownGrace. Stop without a running Run returns nil.
func (c *Client) Stop(ctx context.Context) error {
	e := c.engine.Load()
	if e == nil {
		return nil
	}
	e.stop()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		e.abortOnce.Do(func() { close(e.abort) })
		return context.Cause(ctx)
	}
}

// WaitIdle blocks until Run has no job running and no job of any task is
// ready to claim (scheduled jobs are not waited for), or until ctx ends. It
// checks every 20ms. A check that cannot read a shard returns an error
// wrapping ErrShardUnavailable, never a false "idle".
func (c *Client) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		running := 0
		if e := c.engine.Load(); e != nil {
			running = int(e.active.Load())
		}
		if running == 0 {
			ready := 0
			ss, err := c.st.Stats(ctx)
			if err != nil {
				return err
			}
			for _, s := range ss {
				if !s.Healthy {
					return fmt.Errorf("%w: shard %d: %s", ErrShardUnavailable, s.Shard, s.LastError)
				}
				ready += int(s.Pending)
			}
			if ready == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// WorkerStats returns the statistics of the current (or last) Run, and
// false if Run has never started.
func (c *Client) WorkerStats() (WorkerStats, bool) {
	e := c.engine.Load()
	if e == nil {
		return WorkerStats{}, false
	}
	return e.stats(), true
}

func (e *engine) stats() WorkerStats {
	now := e.c.now()
	s := WorkerStats{
		WorkerID:      e.c.cfg.WorkerID,
		State:         e.state.Load().(WorkerState),
		Concurrency:   int(e.limit.Load()),
		Running:       int(e.executing.Load()),
		Prefetched:    max(0, int(e.active.Load()-e.executing.Load())),
		Processed:     e.processed.Load(),
		Failed:        e.failed.Load(),
		Retried:       e.retried.Load(),
		LeaseLost:     e.lostCnt.Load(),
		StartedAt:     e.started,
		Uptime:        now.Sub(e.started),
		UptimeSeconds: now.Sub(e.started).Seconds(),
	}
	if h := s.Uptime.Hours(); h > 0 {
		s.ThroughputPerHour = float64(s.Processed) / h
	}
	e.mu.Lock()
	for id := range e.running {
		s.CurrentJobs = append(s.CurrentJobs, id)
	}
	e.mu.Unlock()
	return s
}

func (e *engine) fillStats(s *Stats) {
	if e.limiter != nil {
		s.TokensAvailable = e.limiter.Remaining()
	}
	rank := map[breaker.State]int{breaker.Closed: 0, breaker.HalfOpen: 1, breaker.Open: 2}
	worst := breaker.Closed
	s.Circuits = make(map[string]string, len(e.breakers))
	for name, b := range e.breakers {
		bs := b.Stats()
		s.Circuits[name] = bs.State.String()
		if rank[bs.State] > rank[worst] {
			worst = bs.State
		}
		s.CircuitFailures = max(s.CircuitFailures, bs.Failures)
	}
	s.CircuitState = worst.String()
	s.IsHealthy = s.IsHealthy && worst != breaker.Open
}

// breakerFor returns the breaker that guards task.
func (e *engine) breakerFor(task string) *breaker.Breaker {
	if b, ok := e.breakers[task]; ok {
		return b
	}
	return e.breakers[""]
}

// claimGroup is one claim of a fetch round: tasks (nil: any task) and at
// most max jobs, with the breaker probe ticket and task rate limiter that
// guard it.
type claimGroup struct {
	tasks   []string
	max     int
	probe   *breaker.Ticket
	limiter *ratelimit.Limiter // tokens for max jobs were taken; unused ones are refunded
}

// plan decides what a fetch round of up to n jobs may claim. Tasks whose
// breaker is open, or whose rate limiter has no token, are left out: they
// cost no claim and hold no worker slot while they wait. A half-open task
// gets one probe job. retryIn is how soon a left-out task may be claimable
// again (an hour if none is left out).
func (e *engine) plan(n int) (groups []claimGroup, retryIn time.Duration) {
	retryIn = time.Hour
	var free []string // closed breaker, no task limiter
	excluded := false
	for _, name := range e.order {
		b := e.breakers[name]
		t, ok := b.Allow()
		if !ok {
			excluded = true
			retryIn = min(retryIn, b.Stats().RecoveryRemaining)
			continue
		}
		want := n
		if t.Probe() {
			want = 1
		}
		l := e.limiters[name]
		if l != nil {
			got := 0
			for got < want && l.TryAcquire() {
				got++
			}
			if got == 0 {
				e.rlWaits[name].Add(1)
				t.Release()
				excluded = true
				retryIn = min(retryIn, l.RetryAfter())
				continue
			}
			want = got
		}
		switch {
		case t.Probe():
			groups = append(groups, claimGroup{tasks: []string{name}, max: 1, probe: &t, limiter: l})
		case l != nil:
			groups = append(groups, claimGroup{tasks: []string{name}, max: want, limiter: l})
		default:
			free = append(free, name)
		}
	}
	if len(free) > 0 {
		tasks := free
		if !excluded && len(groups) == 0 {
			tasks = e.c.names // every task: the usual filter (nil with a catch-all)
		} else if len(free) == 1 && free[0] == "" && e.c.names == nil {
			tasks = nil
		}
		groups = append(groups, claimGroup{tasks: tasks, max: n})
	}
	return groups, retryIn
}

// fetch claims jobs while slots are free and starts one goroutine per job.
func (e *engine) fetch(ctx context.Context) {
	c := e.c
	gather := time.NewTimer(time.Hour)
	defer gather.Stop()
	// lastVersion is the shards' data version, read before this round's
	// claims only when versioned: busy rounds skip the read, and a round
	// that finds nothing without it reads it and claims once more before
	// idling, so that no commit slips between the claim and the wait.
	var lastVersion int64
	versioned := false
	// waiting holds prefetched jobs: when ClaimBatch exceeds the number of
	// jobs that may run at once (and no rate limiter counts tokens per
	// started job), a claim takes a whole batch and the jobs that find no
	// free slot wait here, their leases renewed by heartbeats, and start
	// as slots free. The next claim waits until all have started. Jobs
	// still waiting when claiming stops go back to pending unspent.
	var waiting []held
	defer func() {
		for _, h := range waiting {
			if h.t != nil {
				h.t.Release()
			}
			e.release(h.rj)
			e.unhold(h.rj)
		}
	}()
	prefetch := e.limiter == nil && len(e.limiters) == 0
	for ctx.Err() == nil {
		limit := e.limit.Load()
		free := int(limit - e.executing.Load())
		for free > 0 && len(waiting) > 0 {
			e.launch(waiting[0].rj, waiting[0].t)
			waiting[0] = held{}
			waiting = waiting[1:]
			free--
		}
		if free <= 0 || len(waiting) > 0 {
			select {
			case <-ctx.Done():
			case <-e.slotFree:
			}
			continue
		}
		batch := c.cfg.ClaimBatch
		ahead := prefetch && batch > int(limit)
		// While jobs run, wait up to gatherWait for a whole batch of free
		// slots, so that claims take batches rather than the first freed
		// slot each (a claim is a write transaction however few jobs it
		// takes, and the jobs of one batch finish close together).
		if want := min(int(limit), batch); !ahead && free < want && e.executing.Load() > 0 {
			gather.Reset(gatherWait)
			for free < want && free > 0 {
				select {
				case <-ctx.Done():
				case <-e.slotFree:
					free = int(e.limit.Load() - e.executing.Load())
					continue
				case <-gather.C:
				}
				break
			}
			gather.Stop()
			if free <= 0 || ctx.Err() != nil {
				continue
			}
		}
		n := min(free, batch)
		if ahead {
			n = batch
		}
		if e.limiter != nil {
			// Tokens are taken per job started, never per poll: one is
			// awaited, more taken if available, unused ones refunded.
			if err := e.limiter.Acquire(ctx); err != nil {
				return
			}
			got := 1
			for got < n && e.limiter.TryAcquire() {
				got++
			}
			n = got
		}
		groups, retryIn := e.plan(n)
		if versioned {
			if v, err := c.st.DataVersion(ctx); err == nil {
				lastVersion = v
			} else {
				versioned = false
			}
		}
		claimed := 0
		for _, g := range groups {
			var jobs []*Job
			if room := min(g.max, n-claimed); room > 0 {
				jobs, _ = e.claim(ctx, g.tasks, room)
			}
			if g.limiter != nil {
				for range g.max - len(jobs) {
					g.limiter.Refund()
				}
			}
			if g.probe != nil && len(jobs) == 0 {
				g.probe.Release() // a probe that finds no job must not wedge the breaker
			}
			batches := e.ackBatches(jobs, free)
			for _, j := range jobs {
				if free > 0 {
					e.start(j, g.probe, batches[j.Shard])
					free--
				} else {
					waiting = append(waiting, held{e.hold(j), g.probe})
				}
			}
			claimed += len(jobs)
		}
		if e.limiter != nil {
			for range n - claimed {
				e.limiter.Refund()
			}
		}
		switch {
		case claimed > 0:
			versioned = false
		case !versioned:
			versioned = true // read the version, then claim once more
		default:
			e.idle(ctx, lastVersion, retryIn)
			versioned = false
		}
	}
}

// gatherWait bounds how long fetch waits for more free slots before a
// claim while jobs are running. It is far below any real job's run time
// (River waits 100ms between fetches).
const gatherWait = time.Millisecond

// claim claims up to max jobs of tasks (nil: any task).
func (e *engine) claim(ctx context.Context, tasks []string, max int) ([]*Job, error) {
	if len(tasks) == 1 && tasks[0] == "" && e.c.names == nil {
		tasks = nil // the catch-all handler's group covers every task
	}
	jobs, err := e.c.st.Claim(ctx, store.ClaimParams{WorkerID: e.c.cfg.WorkerID, Max: max, Now: e.c.now(), Tasks: tasks,
		Order: e.claimOrder()})
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
		e.log.WarnContext(ctx, "claim failed", "err", err)
	}
	// Stay on a shard that filled the batch: the next claim then joins the
	// group transaction that acknowledges this batch on that shard's
	// writer, one commit for both.
	switch {
	case len(jobs) == max && jobs[len(jobs)-1].Shard == e.sticky:
		e.streak++
	case len(jobs) == max:
		e.sticky, e.streak = jobs[len(jobs)-1].Shard, 1
	default:
		e.sticky, e.streak = -1, 0
	}
	return jobs, err
}

// maxStreak bounds how many claims in a row start at the same shard, so
// that a shard with a steady inflow cannot starve the others.
const maxStreak = 8

// claimOrder returns the shards to visit: a fresh random order, led by the
// sticky shard while its streak lasts.
func (e *engine) claimOrder() []int {
	order := rand.Perm(e.c.cfg.Shards)
	if e.sticky < 0 || e.streak >= maxStreak {
		e.sticky, e.streak = -1, 0
		return order
	}
	for i, sh := range order {
		if sh == e.sticky {
			order[0], order[i] = order[i], order[0]
			break
		}
	}
	return order
}

// idle waits for a reason to claim again: a local enqueue, a commit by
// another connection (PRAGMA data_version, checked every PollInterval), a
// scheduled job coming due, a left-out task becoming claimable (retryIn),
// or ctx's end.
func (e *engine) idle(ctx context.Context, lastVersion int64, retryIn time.Duration) {
	c := e.c
	retry := time.NewTimer(max(retryIn, time.Millisecond))
	defer retry.Stop()
	var due <-chan time.Time
	if t, ok, err := c.st.NextDue(ctx); err == nil && ok {
		timer := time.NewTimer(max(0, t.Sub(c.now())) + time.Millisecond)
		defer timer.Stop()
		due = timer.C
	}
	// A full re-check now and then covers clock steps and missed signals.
	fallback := time.NewTimer(time.Second + rand.N(time.Second))
	defer fallback.Stop()
	// Poll every PollInterval at first; after idleBackoffAfter of quiet,
	// back off to idleMaxPolls times that, so an idle worker costs little
	// CPU while a busy one still sees other processes' enqueues at once.
	interval, start := c.cfg.PollInterval, time.Now()
	poll := time.NewTimer(interval)
	defer poll.Stop()
	// A store that is notified of other processes' commits (PostgreSQL's
	// LISTEN/NOTIFY) wakes the fetcher at once; polling stays the fallback.
	var changes <-chan struct{}
	if n, ok := c.st.(store.Notifier); ok {
		changes = n.Changes()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
			return
		case <-changes:
			return
		case <-due:
			return
		case <-retry.C:
			return
		case <-fallback.C:
			return
		case <-poll.C:
			v, err := c.st.DataVersion(ctx)
			if err != nil || v != lastVersion {
				return
			}
			if time.Since(start) > idleBackoffAfter {
				interval = min(interval*2, idleMaxPolls*c.cfg.PollInterval)
			}
			poll.Reset(interval)
		}
	}
}

// Idle polling back-off: see idle.
const (
	idleBackoffAfter = 200 * time.Millisecond
	idleMaxPolls     = 4
)

// held is a claimed job waiting for a worker slot (prefetch), with the
// breaker probe ticket that guards it.
type held struct {
	rj *runningJob
	t  *breaker.Ticket
}

// hold registers a claimed job: from now on heartbeats renew its lease
// and it counts as active, whether it runs at once or waits for a slot.
func (e *engine) hold(j *Job) *runningJob {
	jctx, cancel := context.WithCancelCause(e.jobCtx)
	rj := &runningJob{job: j, ctx: jctx, cancel: cancel}
	e.mu.Lock()
	e.running[j.ID] = rj
	e.mu.Unlock()
	e.active.Add(1)
	return rj
}

// unhold forgets a held job that never ran.
func (e *engine) unhold(rj *runningJob) {
	rj.cancel(nil)
	e.mu.Lock()
	delete(e.running, rj.job.ID)
	e.mu.Unlock()
	e.active.Add(-1)
}

// start runs one claimed job on its own goroutine, its acknowledgement
// collected by b (nil: acknowledged alone).
func (e *engine) start(j *Job, t *breaker.Ticket, b *ackBatch) {
	rj := e.hold(j)
	rj.batch = b
	e.launch(rj, t)
}

// ackBatches returns an ackBatch for each shard of which at least two of
// the first n of one claim's jobs (those that start at once) come.
// Prefetched jobs are acknowledged alone: they start one by one as slots
// free, and holding the early ones' acknowledgements back for them would
// only serialise one big commit with the next claim.
func (e *engine) ackBatches(jobs []*Job, n int) map[int]*ackBatch {
	n = min(n, len(jobs))
	if n < 2 {
		return nil
	}
	var m map[int]*ackBatch
	for i, j := range jobs[:n] {
		if b := m[j.Shard]; b != nil {
			b.remaining++
			continue
		}
		for _, k := range jobs[i+1 : n] {
			if k.Shard == j.Shard {
				if m == nil {
					m = make(map[int]*ackBatch)
				}
				m[j.Shard] = &ackBatch{e: e, remaining: 1}
				break
			}
		}
	}
	return m
}

// launch runs a held job on its own goroutine, taking a worker slot.
func (e *engine) launch(rj *runningJob, t *breaker.Ticket) {
	if rj.lost.Load() {
		// Taken back while it waited for a slot: another worker owns it.
		if t != nil {
			t.Release()
		}
		e.lostCnt.Add(1)
		if rj.batch != nil {
			rj.batch.leave()
		}
		e.unhold(rj)
		return
	}
	e.executing.Add(1)
	e.jobWG.Go(func() {
		defer func() {
			if rj.batch != nil && !rj.queued {
				rj.batch.leave()
			}
			e.unhold(rj)
			e.freeSlot(rj)
		}()
		e.execute(rj.ctx, rj, t)
	})
}

// freeSlot gives rj's worker slot back, once, and wakes the fetcher.
func (e *engine) freeSlot(rj *runningJob) {
	if rj.freed.Swap(true) {
		return
	}
	e.executing.Add(-1)
	select {
	case e.slotFree <- struct{}{}:
	default:
	}
}

func (e *engine) execute(ctx context.Context, rj *runningJob, t *breaker.Ticket) {
	c, j := e.c, rj.job
	settle := func(err error, retryable bool) {
		switch {
		case t != nil && err == nil:
			t.Success()
		case t != nil && retryable:
			t.Failure()
		case t != nil:
			t.Release()
		case err == nil:
			e.breakerFor(j.Task).Success()
		case retryable:
			e.breakerFor(j.Task).Failure()
		}
	}
	h, ok := c.handlers[j.Task]
	if !ok && j.Task == "" && c.defaultH != nil {
		h, ok = c.defaultH, true // a job stored without a task (queue-max's)
	}
	if !ok {
		h, ok = c.handlers[""]
	}
	if !ok {
		if t != nil {
			t.Release()
		}
		e.finish(ctx, rj, nil, Permanent(fmt.Errorf("%w: %q (no handler registered)", ErrUnknownTask, j.Task)))
		return
	}
	e.hook(ctx, "on_start", func() {
		if c.cfg.Hooks.OnStart != nil {
			c.cfg.Hooks.OnStart(ctx, j)
		}
	})
	result, err := e.work(ctx, h, j)
	e.freeSlot(rj)
	if err != nil && context.Cause(e.jobCtx) != nil && errors.Is(err, context.Canceled) {
		// Cancelled by the drain timeout: give the job back unspent.
		if t != nil {
			t.Release()
		}
		e.release(rj)
		return
	}
	settle(err, err != nil && !Classify(err).Permanent)
	e.finish(ctx, rj, result, err)
}

// call runs the handler with the task's timeout, converting panics into
// errors and retrying in-process on errors RetryOn selects.
func (e *engine) call(ctx context.Context, h *Handler, j *Job) (any, error) {
	o := h.Options
	inline := 0
	if o.RetryOn != nil {
		inline = o.InlineRetries
		if inline == 0 {
			inline = 3
		}
	}
	for attempt := 0; ; attempt++ {
		result, err := e.callOnce(ctx, h, j)
		if err == nil || attempt >= inline || !o.RetryOn(err) || ctx.Err() != nil {
			return result, err
		}
		d := min(100*time.Millisecond<<attempt, 5*time.Second)
		e.log.DebugContext(ctx, "inline retry", "task", j.Task, "job_id", int64(j.ID), "attempt", attempt+1, "err", err)
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, context.Cause(ctx)
		case <-timer.C:
		}
	}
}

func (e *engine) callOnce(ctx context.Context, h *Handler, j *Job) (result any, err error) {
	if limit := h.Options.Timeout; limit > 0 {
		parent := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
		defer func() {
			// A handler that returns an error after its deadline passed
			// (and not because the whole run is stopping) timed out.
			if err != nil && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				if _, ok := errors.AsType[*TimeoutError](err); !ok {
					err = fmt.Errorf("%w: %w", &TimeoutError{Limit: limit}, err)
				}
			}
		}()
	}
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, panicError(r)
		}
	}()
	return h.Func(ctx, j)
}

// finish records the outcome of an attempt.
func (e *engine) finish(ctx context.Context, rj *runningJob, result any, jobErr error) {
	c, j := e.c, rj.job
	// Acknowledgements must reach the store even while draining.
	ackCtx := context.WithoutCancel(ctx)
	if rj.lost.Load() {
		e.lostCnt.Add(1)
		e.log.WarnContext(ackCtx, "job lease lost while running; result discarded", "task", j.Task, "job_id", int64(j.ID))
		return
	}
	if jobErr == nil {
		var err error
		if rj.batch != nil {
			err = e.completeBatched(ackCtx, rj, result)
		} else {
			err = c.Complete(ackCtx, j, result)
		}
		switch {
		case errors.Is(err, ErrLeaseLost):
			e.lostCnt.Add(1)
			e.log.WarnContext(ackCtx, "job lease lost; completion rejected", "task", j.Task, "job_id", int64(j.ID))
		case err != nil:
			e.log.ErrorContext(ackCtx, "record completion", "task", j.Task, "job_id", int64(j.ID), "err", err)
		default:
			e.processed.Add(1)
			e.log.LogAttrs(ackCtx, slog.LevelDebug, "job completed", slog.String("task", j.Task), slog.Int64("job_id", int64(j.ID)))
			e.hook(ackCtx, "on_complete", func() {
				if c.cfg.Hooks.OnComplete != nil {
					c.cfg.Hooks.OnComplete(ackCtx, j, result)
				}
			})
		}
		return
	}
	out := c.failOutcome(j, jobErr)
	err := c.record(ackCtx, j, jobErr, out, stackOf(jobErr))
	switch {
	case errors.Is(err, ErrLeaseLost):
		e.lostCnt.Add(1)
		e.log.WarnContext(ackCtx, "job lease lost; failure rejected", "task", j.Task, "job_id", int64(j.ID))
		return
	case err != nil:
		e.log.ErrorContext(ackCtx, "record failure", "task", j.Task, "job_id", int64(j.ID), "err", err)
		return
	case out.Dead:
		e.failed.Add(1)
		e.log.WarnContext(ackCtx, "job dead-lettered", "task", j.Task, "job_id", int64(j.ID), "attempt", j.Attempts, "err", jobErr)
	default:
		e.retried.Add(1)
		e.log.WarnContext(ackCtx, "job failed; retry scheduled", "task", j.Task, "job_id", int64(j.ID), "attempt", j.Attempts,
			"retry_at", out.RetryAt, "err", jobErr)
	}
	e.hook(ackCtx, "on_error", func() {
		if c.cfg.Hooks.OnError != nil {
			c.cfg.Hooks.OnError(ackCtx, j, jobErr, out)
		}
	})
}

// completeBatched is Client.Complete with the acknowledgement committed
// together with those of rj's batch.
func (e *engine) completeBatched(ctx context.Context, rj *runningJob, result any) error {
	c, j := e.c, rj.job
	var raw json.RawMessage
	if result != nil && !isNilValue(result) {
		b, err := json.Marshal(result)
		if err != nil {
			return c.Complete(ctx, j, result) // fails the job; rj leaves the batch
		}
		raw = b
	}
	rj.queued = true
	if err := rj.batch.ack(j, raw); err != nil {
		return err
	}
	c.emit(ctx, Event{Kind: EventCompleted, JobID: j.ID, Shard: j.Shard, Task: j.Task, Attempt: j.Attempts})
	return nil
}

func (e *engine) release(rj *runningJob) {
	if err := e.c.Release(context.WithoutCancel(e.jobCtx), rj.job); err != nil && !errors.Is(err, ErrLeaseLost) {
		e.log.Error("return unfinished job to pending", "job_id", int64(rj.job.ID), "err", err)
	}
}

func (e *engine) hook(ctx context.Context, name string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			e.log.ErrorContext(ctx, "hook panicked", "hook", name, "panic", fmt.Sprint(r))
		}
	}()
	fn()
}

// heartbeats renews running jobs' heartbeats every HeartbeatInterval. A job
// whose lease was lost is cancelled: another worker owns it now.
func (e *engine) heartbeats(ctx context.Context) {
	t := time.NewTicker(e.c.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.renew(ctx)
	}
}

// renew renews the heartbeats of every job this engine holds, cancelling
// those whose lease was lost.
func (e *engine) renew(ctx context.Context) {
	e.mu.Lock()
	rjs := make([]*runningJob, 0, len(e.running))
	for _, rj := range e.running {
		rjs = append(rjs, rj)
	}
	e.mu.Unlock()
	if len(rjs) == 0 {
		return
	}
	ls := make([]store.Lease, len(rjs))
	for i, rj := range rjs {
		ls[i] = lease(rj.job)
	}
	for i, err := range e.c.st.Heartbeat(ctx, ls, e.c.now()) {
		switch {
		case errors.Is(err, ErrLeaseLost):
			rjs[i].lost.Store(true)
			rjs[i].cancel(ErrLeaseLost)
		case err != nil && ctx.Err() == nil:
			e.log.WarnContext(ctx, "heartbeat failed", "job_id", int64(rjs[i].job.ID), "err", err)
		}
	}
}

// maintenance recovers orphans, cleans up old jobs and checks the alert
// threshold.
func (e *engine) maintenance(ctx context.Context) {
	c := e.c
	t := time.NewTicker(c.cfg.RecoveryInterval)
	defer t.Stop()
	lastCleanup := time.Time{}
	for {
		// Renew this process's own leases first: a heartbeat tick starved
		// under load must not let our own recovery take back jobs we are
		// still running.
		e.renew(ctx)
		res, err := c.RecoverOrphans(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.WarnContext(ctx, "orphan recovery failed", "err", err)
		case res.Requeued+res.DeadLettered > 0:
			e.log.WarnContext(ctx, "recovered orphaned jobs", "requeued", res.Requeued, "dead_lettered", res.DeadLettered)
		}
		if now := c.now(); now.Sub(lastCleanup) >= time.Hour {
			lastCleanup = now
			if res, err := c.Cleanup(ctx, 0); err != nil && ctx.Err() == nil {
				e.log.WarnContext(ctx, "cleanup failed", "err", err)
			} else if res.Jobs+res.DeadLetters > 0 {
				e.log.InfoContext(ctx, "cleaned up old jobs", "jobs", res.Jobs, "dead_letters", res.DeadLetters)
			}
		}
		c.checkAlert(ctx, true)
		e.warnUnhandled(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// autoscale adjusts the engine's concurrency by the backlog.
func (e *engine) autoscale(ctx context.Context) {
	p := *e.auto
	t := time.NewTicker(p.CheckInterval)
	defer t.Stop()
	var last time.Time
	for {
		if s, err := e.c.st.Stats(ctx); err == nil {
			var pending int64
			for _, sh := range s {
				pending += sh.Pending
			}
			cur := int(e.limit.Load())
			now := e.c.now()
			target := p.Target(cur, pending, now.Sub(last), !last.IsZero())
			if target != cur {
				e.limit.Store(int64(target))
				last = now
				e.log.InfoContext(ctx, "autoscaled workers", "from", cur, "to", target, "pending", pending)
				select {
				case e.slotFree <- struct{}{}:
				default:
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
