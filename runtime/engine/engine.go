package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/ratelimit"
	"github.com/queuemax/queuemax/runtime/scale"
	"github.com/queuemax/queuemax/runtime/store"
)

// ErrStopping is the cancellation cause of a drain.
var ErrStopping = errors.New("queuemax: client stopping")

// ErrJobCancelled is the cause of a handler's context when a cancel was
// requested for its job while it ran.
var ErrJobCancelled = queuemaxtype.ErrJobCancelled

// Config is what an Engine needs: storage, settings already defaulted and
// validated by the caller, the breakers and rate limiters it decides claims
// by, and the Executor that runs and finishes each job.
type Config struct {
	Store    store.Store
	WorkerID string
	Shards   int
	// Workers is how many handlers may run at once, ClaimBatch how many
	// jobs one claim may take (more than Workers prefetches).
	Workers, ClaimBatch int
	// ClaimMax, when above ClaimBatch, lets claims grow toward it while
	// the backlog is deep and jobs are short: a claim that came back full
	// and whose previous half-batch the workers ran within growWindow
	// doubles the next one; a slow half-batch halves it (never below
	// ClaimBatch). So prefetch stays bounded by time (about two windows of
	// work held locally), not by count. Zero: claims take ClaimBatch.
	ClaimMax          int
	PollInterval      time.Duration
	HeartbeatInterval time.Duration
	RecoveryInterval  time.Duration
	// CleanupInterval is how often maintenance deletes old jobs; zero
	// means an hour.
	CleanupInterval time.Duration
	DrainTimeout    time.Duration
	// ShutdownGrace is how long Run waits for handlers to return after
	// cancelling them at the end of the drain; then they are abandoned.
	ShutdownGrace time.Duration
	// Tasks restricts claims to these tasks; nil claims every task (a
	// catch-all handler).
	Tasks []string
	// Limiter, when set, caps how many jobs start overall; TaskLimiters
	// per task.
	Limiter      *ratelimit.Limiter
	TaskLimiters map[string]*ratelimit.Limiter
	// Breakers are the policies of the breakers that guard each task (key
	// "" covers tasks without their own); a breaker whose Threshold is
	// zero is off: it never opens. It must not be empty. A breaker's
	// state is its stored row (runtime/admission).
	Breakers map[string]breaker.Policy
	// Events, when set, receives a circuit_state_changed event for each
	// change of a task's stored breaker this engine sees.
	Events *Events
	// GlobalLimits are the tasks' limits held in the store, over every
	// process (runtime/admission).
	GlobalLimits map[string]store.LimitRule
	// LimitBy names, per task, the payload key its global limits apply
	// per (runtime/admission).
	LimitBy map[string]string
	// WideLimits are, per task limited per key (LimitBy), its limits over
	// all its keys together, beside the per-key GlobalLimits[task]
	// (runtime/admission).
	WideLimits map[string]store.LimitRule
	Autoscale  *scale.Policy // validated, with defaults; nil: fixed Workers
	// Queues caps named queues (name → MaxWorkers); the default queue gets
	// the rest of the limit, and only these queues are claimed. Nil: one
	// pool for every queue (runtime/admission).
	Queues map[string]int
	// Wake is signalled after local enqueues (and by the engine after
	// orphan recovery requeued jobs), so an idle producer claims at once.
	Wake chan struct{}
	Now  func() time.Time
	Log  *slog.Logger

	// Exec runs each claimed job's attempt and finishes it (exec.go,
	// outcome.go).
	Exec *Executor
	// StuckTimeout is how old a heartbeat must be before the rescuer takes
	// its job back as an orphan; zero skips orphan recovery.
	StuckTimeout time.Duration
	// CompletedRetention and CleanupAge are the ages maintenance deletes
	// old jobs by (see PruneParams); a zero CleanupAge skips the cleanup.
	CompletedRetention, CleanupAge time.Duration
	// Alerts, when set, is checked at each maintenance round (the
	// client's AlertThreshold).
	Alerts *Alerts
	// Renames, when set, are the tasks' earlier names: the waiting jobs
	// stored under one are renamed before the first claim and at each
	// maintenance round (renames.go).
	Renames *enqueue.Renames
	// Periodic, when set, runs the periodic scheduler while claiming.
	Periodic Periodic
	// Registry, when set, keeps this Run's worker-registry entry: written
	// once before the first claim, refreshed beside maintenance until the
	// drain has ended, removed at the stop.
	Registry *Registry
	// WorkflowEnds, when set, announces the workflow ends recorded by no
	// process of ours (workflow.go).
	WorkflowEnds *WorkflowEnds
}

// Periodic is a periodic scheduler: Register once, then Tick at each slot.
type Periodic interface {
	Register(ctx context.Context, now time.Time) error
	// Tick enqueues the slots due at now and returns when the next is.
	Tick(ctx context.Context, now time.Time) (next time.Time, err error)
	// Now is the scheduler's clock (the database's, where it has one).
	Now() time.Time
}

// State is the state of an engine.
type State string

// Engine states.
const (
	Running  State = "running"
	Stopping State = "stopping"
	Stopped  State = "stopped"
)

// Stats describes a running (or stopped) engine.
type Stats struct {
	State                                 State
	Concurrency, Running, Prefetched      int
	Processed, Failed, Retried, LeaseLost int64
	StartedAt                             time.Time
	CurrentJobs                           []store.JobID
}

// Engine is the state of one Client.Run.
type Engine struct {
	cfg Config
	log *slog.Logger
	out *outages // bounds the logs of an outage (outage.go)
	// adm decides what is claimed and started: breakers, rate limiters,
	// global, per-key and queue limits, queue caps (runtime/admission).
	adm *admission.Controller

	limit     atomic.Int64  // how many jobs may run at once
	active    atomic.Int64  // jobs held (queued, running or being acknowledged)
	inflight  atomic.Int64  // jobs queued or running: claimed, handler not returned
	executing atomic.Int64  // jobs whose handler has not returned yet
	lowWater  atomic.Int64  // the producer claims again once inflight drops below this
	slotFree  chan struct{} // buffer 1: the queue running low wakes the producer

	// queue holds claimed jobs for the workers; its capacity is the most
	// jobs a claim may queue (ClaimBatch, or the largest worker limit).
	queue   chan *runningJob
	acks    *acker
	poolMu  sync.Mutex
	workers atomic.Int64 // worker goroutines, changed under poolMu
	workWG  sync.WaitGroup

	mu      sync.Mutex
	running map[store.JobID]*runningJob

	state                               atomic.Value // State
	started                             time.Time
	processed, failed, retried, lostCnt atomic.Int64

	jobCtx     context.Context // parent of job contexts; outlives Run's ctx
	cancelJobs context.CancelCauseFunc
	jobWG      sync.WaitGroup // one per held job
	stopMu     sync.Mutex
	stop       context.CancelFunc // ends claiming
	stopped    bool
	done       chan struct{} // closed when Run returns
	abort      chan struct{} // closed by Abort: cut the drain short
	abortOnce  sync.Once
}

// New returns an engine for cfg; Run starts it.
func New(cfg Config) *Engine {
	if cfg.CleanupInterval <= 0 {
		cfg.CleanupInterval = time.Hour
	}
	if cfg.ClaimBatch <= 0 {
		cfg.ClaimBatch = cfg.Workers
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	e := &Engine{
		cfg:      cfg,
		log:      cfg.Log,
		slotFree: make(chan struct{}, 1),
		running:  make(map[store.JobID]*runningJob),
		started:  cfg.Now(),
		done:     make(chan struct{}),
		abort:    make(chan struct{}),
	}
	e.jobCtx, e.cancelJobs = context.WithCancelCause(context.Background()) // Run replaces it
	e.acks = newAcker(e)
	e.out = newOutages(cfg.Log)
	queueCap := max(cfg.ClaimBatch, cfg.ClaimMax, cfg.Workers)
	if p := cfg.Autoscale; p != nil {
		queueCap = max(queueCap, p.Max)
	}
	e.queue = make(chan *runningJob, queueCap)
	var events admission.Emitter
	if cfg.Events != nil {
		events = cfg.Events
	}
	e.adm = admission.New(admission.Config{
		Store: cfg.Store, WorkerID: cfg.WorkerID, Tasks: cfg.Tasks, Workers: cfg.Workers, Autoscale: cfg.Autoscale,
		HeartbeatInterval: cfg.HeartbeatInterval, PollInterval: cfg.PollInterval, StuckTimeout: cfg.StuckTimeout,
		Limiter: cfg.Limiter, TaskLimiters: cfg.TaskLimiters, Breakers: cfg.Breakers, Events: events,
		GlobalLimits: cfg.GlobalLimits, LimitBy: cfg.LimitBy, WideLimits: cfg.WideLimits, Queues: cfg.Queues,
		Now: cfg.Now, Log: cfg.Log,
	}, admission.Host{Limit: &e.limit, Executing: &e.executing, Jobs: &e.jobWG,
		JobCtx: func() context.Context { return e.jobCtx }, Wake: e.signalSlot, Out: e.out})
	if cfg.Registry != nil {
		cfg.Registry.e = e
	}
	e.state.Store(Running)
	e.limit.Store(int64(cfg.Workers))
	if p := cfg.Autoscale; p != nil {
		e.limit.Store(int64(max(p.Min, min(p.Max, cfg.Workers))))
	}
	return e
}

// Run runs the engine's services until ctx ends, then drains: it stops
// claiming, lets running jobs finish for up to DrainTimeout, cancels the
// rest (returning them to pending unspent) and waits up to ShutdownGrace
// for their handlers; then it stops the other services. It returns only
// after every goroutine it started has exited, except abandoned handlers.
func (e *Engine) Run(ctx context.Context) {
	defer close(e.done)
	// Job contexts carry ctx's values but outlive it, until the drain ends.
	e.jobCtx, e.cancelJobs = context.WithCancelCause(context.WithoutCancel(ctx))
	defer e.cancelJobs(ErrStopping)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	e.stopMu.Lock()
	e.stop = stop
	if e.stopped {
		stop()
	}
	e.stopMu.Unlock()

	// Background services keep running during the drain (heartbeats
	// must renew the leases of draining jobs).
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var svc sync.WaitGroup
	for _, s := range e.backgroundServices() {
		svc.Go(func() { run(bg, s) })
	}
	e.tasks(ctx) // before the first claim
	if e.cfg.Registry != nil {
		e.cfg.Registry.RegisterFirst(ctx)
	}
	stopAcks := make(chan struct{})
	go e.acks.run(stopAcks)
	e.ensureWorkers()
	var claiming sync.WaitGroup
	p := newProducer(e)
	claiming.Go(func() { p.run(ctx) })
	if e.cfg.Periodic != nil {
		claiming.Go(func() { newScheduler(e).run(ctx) })
	}

	<-ctx.Done()
	e.state.Store(Stopping)
	claiming.Wait()
	close(e.queue) // the producer has released what it queued; workers exit when idle
	e.log.Info("queuemax draining", "running", e.active.Load(), "drain_timeout", e.cfg.DrainTimeout)
	drained := make(chan struct{})
	go func() { e.jobWG.Wait(); close(drained) }()
	timer := time.NewTimer(e.cfg.DrainTimeout)
	clean := true
	select {
	case <-drained:
		timer.Stop()
	case <-timer.C:
		e.log.Warn("drain timeout: cancelling running jobs", "running", e.active.Load())
		clean = e.cancelRunning(drained)
	case <-e.abort:
		timer.Stop()
		e.log.Warn("stop deadline: cancelling running jobs", "running", e.active.Load())
		clean = e.cancelRunning(drained)
	}
	close(stopAcks)
	if clean {
		<-e.acks.done
	} else {
		// A Completed callback may be what hangs: wait for the last
		// acknowledgements only as long as for the handlers.
		grace := time.NewTimer(max(e.cfg.ShutdownGrace, time.Second))
		select {
		case <-e.acks.done:
		case <-grace.C:
			e.log.Error("abandoning the acknowledger: a completion callback does not return")
		}
		grace.Stop()
	}
	if clean {
		e.workWG.Wait() // every worker is idle: the closed queue ends it
	}
	stopBG()
	svc.Wait()
	e.state.Store(Stopped)
}

// backgroundServices are the services that stop after the drain.
func (e *Engine) backgroundServices() []Service {
	ss := []Service{&heartbeater{e: e}, &rescuer{e: e}, &maintenance{e: e}}
	if e.cfg.Autoscale != nil {
		ss = append(ss, &autoscaler{e: e})
	}
	if e.cfg.Registry != nil {
		ss = append(ss, e.cfg.Registry)
	}
	if e.cfg.WorkflowEnds != nil {
		e.cfg.WorkflowEnds.out = e.out
		ss = append(ss, e.cfg.WorkflowEnds)
	}
	for _, s := range e.adm.Services() {
		ss = append(ss, s)
	}
	return ss
}

// cancelRunning cancels the running jobs' contexts and waits up to
// ShutdownGrace for their handlers to return; handlers that ignore
// cancellation are abandoned to their lapsing leases (it returns false).
func (e *Engine) cancelRunning(drained <-chan struct{}) bool {
	e.cancelJobs(ErrStopping)
	if e.cfg.ShutdownGrace <= 0 {
		<-drained
		return true
	}
	grace := time.NewTimer(e.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-drained:
		return true
	case <-grace.C:
		e.mu.Lock()
		ids := make([]int64, 0, len(e.running))
		for id := range e.running {
			ids = append(ids, int64(id))
		}
		e.mu.Unlock()
		e.log.Error("abandoning jobs whose handlers ignore cancellation; their leases lapse after the stuck timeout and they run again",
			"jobs", ids, "grace", e.cfg.ShutdownGrace)
		return false
	}
}

// Stop ends claiming; Run then drains and returns.
func (e *Engine) Stop() {
	e.stopMu.Lock()
	e.stopped = true
	if e.stop != nil {
		e.stop()
	}
	e.stopMu.Unlock()
}

// Abort cuts a drain short: running jobs are cancelled at once.
func (e *Engine) Abort() { e.abortOnce.Do(func() { close(e.abort) }) }

// Done is closed when Run has returned.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Active is the number of jobs held: running, or claimed and waiting.
func (e *Engine) Active() int { return int(e.active.Load()) }

// Limiter is the overall rate limiter (nil: none).
func (e *Engine) Limiter() *ratelimit.Limiter { return e.cfg.Limiter }

// TaskLimiters are the per-task rate limiters.
func (e *Engine) TaskLimiters() map[string]*ratelimit.Limiter { return e.cfg.TaskLimiters }

// RateLimitWaits returns, per task with a limiter, the claim rounds that
// left it out for lack of a token.
func (e *Engine) RateLimitWaits() map[string]int64 { return e.adm.RateLimitWaits() }

// GlobalLimitWaits returns, per task with a global limit, the claim
// rounds that left it out because its limit was reached.
func (e *Engine) GlobalLimitWaits() map[string]int64 { return e.adm.GlobalLimitWaits() }

// BreakerStats returns each task breaker's figures as the engine last saw
// its stored row (at most a second old), by name, and the names sorted.
func (e *Engine) BreakerStats() (map[string]breaker.Stats, []string) { return e.adm.BreakerStats() }

// BreakerOwner is the token this engine's probes are held under.
func (e *Engine) BreakerOwner() string { return e.adm.BreakerOwner() }

// QueueLimitsChanged tells the engine that the queues' stored limits
// changed: it reads them again at its next claim round.
func (e *Engine) QueueLimitsChanged() { e.adm.QueueLimitsChanged() }

// WorkerStats is Stats as queuemax.Client.WorkerStats reports it: under
// workerID, with the uptime and throughput at now.
func (e *Engine) WorkerStats(workerID string, now time.Time) queuemaxtype.WorkerStats {
	es := e.Stats()
	s := queuemaxtype.WorkerStats{
		WorkerID:      workerID,
		State:         queuemaxtype.WorkerState(es.State),
		Concurrency:   es.Concurrency,
		Running:       es.Running,
		Prefetched:    es.Prefetched,
		Processed:     es.Processed,
		Failed:        es.Failed,
		Retried:       es.Retried,
		LeaseLost:     es.LeaseLost,
		StartedAt:     es.StartedAt,
		Uptime:        now.Sub(es.StartedAt),
		UptimeSeconds: now.Sub(es.StartedAt).Seconds(),
		CurrentJobs:   es.CurrentJobs,
	}
	if h := s.Uptime.Hours(); h > 0 {
		s.ThroughputPerHour = float64(s.Processed) / h
	}
	return s
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	s := Stats{
		State:       e.state.Load().(State),
		Concurrency: int(e.limit.Load()),
		Running:     int(e.executing.Load()),
		Prefetched:  max(0, int(e.inflight.Load()-e.executing.Load())),
		Processed:   e.processed.Load(),
		Failed:      e.failed.Load(),
		Retried:     e.retried.Load(),
		LeaseLost:   e.lostCnt.Load(),
		StartedAt:   e.started,
	}
	e.mu.Lock()
	for id := range e.running {
		s.CurrentJobs = append(s.CurrentJobs, id)
	}
	e.mu.Unlock()
	return s
}
