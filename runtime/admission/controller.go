package admission

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/ratelimit"
	"github.com/queuemax/queuemax/runtime/scale"
	"github.com/queuemax/queuemax/runtime/store"
)

// Config is what a Controller decides by: the engine's settings that
// concern admission, already defaulted and validated.
type Config struct {
	Store    store.Store
	WorkerID string
	// Tasks restricts claims to these tasks; nil claims every task.
	Tasks []string
	// Workers and Autoscale size the queue limits' pools.
	Workers   int
	Autoscale *scale.Policy
	// HeartbeatInterval, PollInterval and StuckTimeout time the slots'
	// renewal and expiry and the retries of limits other processes hold.
	HeartbeatInterval, PollInterval, StuckTimeout time.Duration
	// Limiter caps how many jobs start overall in this process;
	// TaskLimiters per task.
	Limiter      *ratelimit.Limiter
	TaskLimiters map[string]*ratelimit.Limiter
	// Breakers are the policies of the breakers that guard each task
	// (key "" covers tasks without their own); a zero Threshold is off.
	Breakers map[string]breaker.Policy
	// Events, when set, receives a circuit_state_changed event for each
	// change of a stored breaker the controller sees.
	Events Emitter
	// GlobalLimits, LimitBy and WideLimits are the tasks' limits held in
	// the store (Rules.Engine, By and Wide).
	GlobalLimits map[string]store.LimitRule
	LimitBy      map[string]string
	WideLimits   map[string]store.LimitRule
	// Queues caps named queues (name → MaxWorkers); see caps.go.
	Queues map[string]int
	Now    func() time.Time
	Log    *slog.Logger
}

// Emitter receives events.
type Emitter interface {
	Emit(ctx context.Context, ev queuemaxtype.Event)
}

// Outages reports a failing service once per outage, and its recovery.
type Outages interface {
	Fail(ctx context.Context, level slog.Level, service, msg string, err error, args ...any)
	OK(ctx context.Context, service string)
}

// Host is what the engine lends its admission.
type Host struct {
	// Limit is how many jobs may run at once, Executing how many run.
	Limit, Executing *atomic.Int64
	// Jobs counts the background writes (slots and tokens given back)
	// the engine waits for before it stops, JobCtx their context.
	Jobs   *sync.WaitGroup
	JobCtx func() context.Context
	// Wake wakes the producer without blocking.
	Wake func()
	Out  Outages
}

// Claimer is the engine's claim path, as a round uses it.
type Claimer interface {
	// Claim claims up to max jobs of tasks (nil: any task) at now; the
	// engine's claim goes through ClaimQueues.
	Claim(ctx context.Context, tasks []string, max int, now time.Time) ([]*store.Job, error)
	// Order is the shards to visit.
	Order() []int
	// BeforeClaims runs once the round's starts are taken, before its
	// first claim.
	BeforeClaims(ctx context.Context)
	// Queue hands a claimed job to the workers (probe: its breaker's
	// probe).
	Queue(j *store.Job, probe bool)
	// ReleaseQueued returns the jobs queued and not started to pending.
	ReleaseQueued()
}

// Controller decides what a process claims and starts: the tasks'
// breakers (breakers.go), the in-process rate limiters, the global and
// per-key limits (global.go, keyed.go, wide.go), the queue limits
// (queue.go), the queue caps (caps.go), and the rate tokens moved to the
// handler's start (stamps.go). The engine calls it once per claim round
// (Round: plan, take, claim, give back) and at each job's start, end and
// drop (Start, End or Drop, and Record or ReleaseProbe).
type Controller struct {
	cfg       Config
	log       *slog.Logger
	out       Outages
	limit     *atomic.Int64
	executing *atomic.Int64
	jobWG     *sync.WaitGroup
	jobCtx    func() context.Context
	wake      func()

	order   []string // breaker names, sorted, for a stable claim plan
	rlWaits map[string]*atomic.Int64
	free    chan struct{} // buffer 1: a slot or a cap came free

	brk    *sharedBreakers
	queues *queueSlots   // nil without Config.Queues (caps.go)
	glim   *globalLimits // nil without Config.GlobalLimits (global.go)
	qlim   *queueLimits  // queue.go
	stamp  *stamps       // stamps.go
}

// New returns the admission of an engine.
func New(cfg Config, h Host) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	c := &Controller{cfg: cfg, log: cfg.Log, out: h.Out, limit: h.Limit, executing: h.Executing, jobWG: h.Jobs,
		jobCtx: h.JobCtx, wake: h.Wake, rlWaits: make(map[string]*atomic.Int64), free: make(chan struct{}, 1)}
	for name := range cfg.TaskLimiters {
		c.rlWaits[name] = new(atomic.Int64)
	}
	for name := range cfg.Breakers {
		c.order = append(c.order, name)
	}
	slices.Sort(c.order)
	c.brk = newSharedBreakers(c)
	c.queues = newQueueSlots(c, cfg.Queues)
	c.glim = newGlobalLimits(c)
	c.qlim = newQueueLimits(c)
	c.stamp = newStamps(c)
	// One wake-up for the idle producer, whichever limit freed a slot.
	if c.queues != nil {
		c.queues.free = c.free
	}
	if c.glim != nil {
		c.glim.free = c.free
	}
	if c.qlim != nil {
		c.qlim.free = c.free
	}
	return c
}

// signalSlot wakes the producer without blocking.
func (c *Controller) signalSlot() { c.wake() }

// Service is a background service of the admission (the engine's Service
// and Closer): the renewal of the slots this process holds.
type Service interface {
	Name() string
	Interval() time.Duration
	RunOnce(ctx context.Context, now time.Time)
	Close(ctx context.Context)
}

// Services are the admission's background services.
func (c *Controller) Services() []Service {
	var ss []Service
	if c.glim != nil {
		ss = append(ss, c.glim)
	}
	if c.qlim != nil {
		ss = append(ss, c.qlim)
	}
	return ss
}

// Freed is signalled when a slot of a limit, or a queue's cap, came free:
// an idle producer claims again.
func (c *Controller) Freed() <-chan struct{} { return c.free }

// Prefetch reports whether claims may take more jobs than the workers
// are free for: not with a rate limiter of this process, queue caps, or
// queue limits that need every slot.
func (c *Controller) Prefetch() bool {
	return c.cfg.Limiter == nil && len(c.cfg.TaskLimiters) == 0 && c.queues == nil && c.qlim.prefetchOK()
}

// QueueRulesActive reports whether the queue limits' rules are read
// again while claims prefetch (RefreshQueueRules).
func (c *Controller) QueueRulesActive() bool { return c.qlim.active() }

// RefreshQueueRules reads the queue limits' rules again and reports
// whether a changed rule asks the prefetched jobs back to pending.
func (c *Controller) RefreshQueueRules(ctx context.Context, now time.Time) bool {
	c.qlim.refresh(ctx, now)
	return c.qlim.requeueAsked()
}

// Held counts one job in (delta 1) or out (-1) of its queue's cap.
func (c *Controller) Held(queue string, delta int) { c.queues.add(queue, delta) }

// ClaimQueues runs one claim of the store under the queues' caps and the
// round's queue grants.
func (c *Controller) ClaimQueues(ctx context.Context, p store.ClaimParams) ([]*store.Job, error) {
	p.Queues = c.queues.limits()
	return c.qlim.claim(ctx, c.cfg.Store, p)
}

// Start waits until j may start in this process (a free global slot of
// the process) and moves its rate tokens to now. It returns false, having
// given back what j held, when j's breaker holds it: it opened after j was
// claimed, and only its probe may run (the stored row is the breaker's one
// state; the caller returns j to pending unspent).
func (c *Controller) Start(j *store.Job, probe bool) bool {
	c.glim.start(j) // waits for a free global slot of the process
	if c.brk.holds(j.Task, probe) {
		c.glim.ended(j, true)
		c.qlim.ended(j)
		c.stamp.drop(j.ID)
		return false
	}
	c.stamp.begun(j.ID)
	return true
}

// End gives back what j's run held: its handler returned.
func (c *Controller) End(j *store.Job) {
	c.glim.ended(j, true) // the job no longer runs: its global slot is free
	c.qlim.ended(j)
}

// Drop gives back what a claimed job held that will not run here (taken
// back, or returned to pending unstarted): its slots, its rate token's
// move, and its breaker probe.
func (c *Controller) Drop(j *store.Job, probe bool) {
	if probe {
		c.brk.releaseProbe(j.Task)
	}
	c.glim.ended(j, false)
	c.qlim.ended(j)
	c.stamp.drop(j.ID)
}

// Record tells j's breaker the outcome of its attempt (err nil: a
// success; probe: the job was the probe); see sharedBreakers.record.
func (c *Controller) Record(j *store.Job, err error, probe bool) { c.brk.record(j, err, probe) }

// ReleaseProbe frees the probe of task's breaker: its job ran, but its
// outcome does not count (the drain cancelled it).
func (c *Controller) ReleaseProbe(task string) { c.brk.releaseProbe(task) }

// Round is one claim round of up to n jobs at now: it takes the overall
// rate limiter's tokens (waiting for one), plans the round by the
// breakers and the tasks' rate limiters, takes the starts of the stored
// limits, claims each group through cl and queues its jobs, and gives
// back what the round did not use. It returns how many jobs it claimed
// and, when tasks were left out, how soon one may be claimable again. Its
// error is the overall rate limiter's wait ending.
func (c *Controller) Round(ctx context.Context, n int, now time.Time, cl Claimer) (claimed int, retryIn time.Duration, err error) {
	if l := c.cfg.Limiter; l != nil {
		// Tokens are taken per job started, never per poll: one is
		// awaited, more taken if available, unused ones refunded.
		if err := l.Acquire(ctx); err != nil {
			return 0, 0, err
		}
		got := 1
		for got < n && l.TryAcquire() {
			got++
		}
		n = got
	}
	groups, retryIn := c.plan(ctx, n, now)
	groups, r := c.take(ctx, groups, n, now, cl)
	retryIn = min(retryIn, r)
	cl.BeforeClaims(ctx)
	var unused []store.LimitGive
	for _, g := range groups {
		var jobs []*store.Job
		room := min(g.max, n-claimed)
		if g.global {
			room = min(room, g.granted)
		}
		jobs, r, unused = c.claim(ctx, g, room, now, unused, cl)
		retryIn = min(retryIn, r)
		if g.limiter != nil {
			for range g.max - len(jobs) {
				g.limiter.Refund()
			}
		}
		for _, j := range jobs {
			cl.Queue(j, g.probe)
		}
		claimed += len(jobs)
	}
	c.settle(ctx, unused)
	if l := c.cfg.Limiter; l != nil {
		for range n - claimed {
			l.Refund()
		}
	}
	return claimed, retryIn, nil
}

// claimGroup is one claim of a round: tasks (nil: any task) and at most
// max jobs, with the breaker probe ticket and task rate limiter that guard
// it.
type claimGroup struct {
	tasks   []string
	max     int
	probe   bool               // one job, its breaker's half-open probe (see ClaimProbe)
	limiter *ratelimit.Limiter // tokens for max jobs were taken; unused ones are refunded
	// global: the task has a global limit (global.go), which granted
	// starts for granted jobs; unused ones are given back.
	global  bool
	granted int
	takenAt time.Time // the store's LimitGrant.At
}

// plan decides what a round of up to n jobs may claim at now. Tasks whose
// stored breaker holds them (breakers.go), or whose rate limiter has no
// token, are left out. A task whose breaker is due for a probe gets one
// probe job if this engine takes the probe. retryIn is how soon a
// left-out task may be claimable again (an hour if none is left out).
func (c *Controller) plan(ctx context.Context, n int, now time.Time) (groups []claimGroup, retryIn time.Duration) {
	retryIn = time.Hour
	var free []string // closed breaker, no task limiter
	excluded := false
	for _, name := range c.order {
		gate, wait := c.brk.gate(ctx, name, now)
		probe := gate == breaker.GateProbe && c.brk.takeProbe(ctx, name, now)
		if gate == breaker.GateHold || gate == breaker.GateProbe && !probe {
			excluded = true
			retryIn = min(retryIn, max(wait, 10*time.Millisecond), breakerRefresh)
			continue
		}
		want := n
		if probe {
			want = 1
		}
		l := c.cfg.TaskLimiters[name]
		if l != nil {
			got := 0
			for got < want && l.TryAcquire() {
				got++
			}
			if got == 0 {
				c.rlWaits[name].Add(1)
				if probe {
					c.brk.releaseProbe(name)
				}
				excluded = true
				retryIn = min(retryIn, l.RetryAfter())
				continue
			}
			want = got
		}
		switch {
		case probe:
			groups = append(groups, claimGroup{tasks: []string{name}, max: 1, probe: true, limiter: l, global: c.glim.limited(name)})
		case l != nil || c.glim.limited(name):
			groups = append(groups, claimGroup{tasks: []string{name}, max: want, limiter: l, global: c.glim.limited(name)})
		default:
			free = append(free, name)
		}
	}
	if len(free) > 0 {
		tasks := free
		if !excluded && len(groups) == 0 {
			tasks = c.cfg.Tasks // every task: the usual filter (nil with a catch-all)
		} else if len(free) == 1 && free[0] == "" && c.cfg.Tasks == nil {
			tasks = nil
		}
		groups = append(groups, claimGroup{tasks: tasks, max: n})
	}
	return groups, retryIn
}

// take takes the round's starts (for n jobs at now) from the stores'
// limits: the queue limits' plan and take, the tasks' global take, in as
// few store calls as they allow. It returns the groups with their grants
// and how soon a group left out may be granted.
func (c *Controller) take(ctx context.Context, groups []claimGroup, n int, now time.Time, cl Claimer) ([]claimGroup, time.Duration) {
	retryIn := c.qlim.plan(ctx, n, now) // queue.go
	if c.qlim.requeueAsked() {
		cl.ReleaseQueued() // a changed queue rule binds on the prefetched jobs too
	}
	if c.glim != nil {
		var r time.Duration
		groups, r = c.glim.take(ctx, groups, now)
		retryIn = min(retryIn, r)
	}
	return groups, min(retryIn, c.qlim.take(ctx, now))
}

// claim claims up to room jobs of group g under its limits (a task
// limited per key claims key by key, keyed.go), appends to unused what
// its grant did not use, and releases a breaker probe that found no job.
// It returns the jobs and how soon a key left out may be granted.
func (c *Controller) claim(ctx context.Context, g claimGroup, room int, now time.Time, unused []store.LimitGive, cl Claimer) ([]*store.Job, time.Duration, []store.LimitGive) {
	retryIn := time.Hour
	var jobs []*store.Job
	keyed := g.global && c.glim.keyBy(g.tasks[0]) != ""
	switch {
	case room > 0 && keyed:
		jobs, retryIn = c.glim.claimKeyed(ctx, cl, g, room, now)
	case room > 0:
		jobs, _ = c.claimFor(ctx, cl, g, room, now)
	}
	if g.global && !keyed {
		unused = c.glim.give(unused, g, room, jobs)
	}
	if g.probe && len(jobs) == 0 {
		c.brk.releaseProbe(g.tasks[0]) // a probe that finds no job must not wedge the breaker
	}
	return jobs, retryIn, unused
}

// settle gives back what a round's grants did not use, the queues' and
// the tasks' in one call.
func (c *Controller) settle(ctx context.Context, unused []store.LimitGive) {
	unused = c.qlim.settle(unused) // queue.go: the queues' gives join the tasks'
	if c.glim != nil {
		c.glim.settle(ctx, unused)
	} else {
		c.qlim.give(ctx, unused)
	}
}

// RateLimitWaits returns, per task with a limiter, the claim rounds that
// left it out for lack of a token.
func (c *Controller) RateLimitWaits() map[string]int64 {
	out := make(map[string]int64, len(c.rlWaits))
	for name, n := range c.rlWaits {
		out[name] = n.Load()
	}
	return out
}
