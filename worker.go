package queuemax

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/ratelimit"
)

// WorkerState is the state of Run's engine; see queuemaxtype.WorkerState.
type WorkerState = queuemaxtype.WorkerState

// Worker states.
const (
	WorkerIdle     = queuemaxtype.WorkerIdle
	WorkerRunning  = queuemaxtype.WorkerRunning
	WorkerStopping = queuemaxtype.WorkerStopping
	WorkerStopped  = queuemaxtype.WorkerStopped
)

// WorkerStats describes the engine of a running (or stopped) Run; see
// queuemaxtype.WorkerStats for its fields.
type WorkerStats = queuemaxtype.WorkerStats

// ShutdownGrace is how long Run waits, after the drain ends and running
// jobs' contexts are cancelled, for their handlers to return. A handler
// still running then ignores cancellation: Run abandons it and returns. Its
// job is not lost: with no heartbeats its lease lapses after
// Config.StuckTimeout and orphan recovery (of any process) runs it again.
// Run therefore returns within DrainTimeout + ShutdownGrace of its
// context ending, plus the time to release unfinished jobs.
const ShutdownGrace = 2 * time.Second

// With the default ClaimBatch, claims may grow to autoClaimFactor×Workers
// jobs (at most maxAutoClaim) while the backlog is deep and jobs are
// short: see engine.Config.ClaimMax.
const (
	autoClaimFactor = 50
	maxAutoClaim    = 1000
)

// newEngine builds the engine of one Run from the client's configuration:
// the breakers and rate limiters it decides claims by, and the client's
// Executor, which runs and finishes its jobs.
func (c *Client) newEngine() (*worker, error) {
	w := &worker{c: c}
	rules := c.limitRules()
	cfg := engine.Config{
		Store:              c.st,
		WorkerID:           c.cfg.WorkerID,
		Shards:             c.cfg.Shards,
		Workers:            c.cfg.Workers,
		ClaimBatch:         c.cfg.ClaimBatch,
		PollInterval:       c.cfg.PollInterval,
		HeartbeatInterval:  c.cfg.HeartbeatInterval,
		RecoveryInterval:   c.cfg.RecoveryInterval,
		DrainTimeout:       c.cfg.DrainTimeout,
		ShutdownGrace:      ShutdownGrace,
		Tasks:              c.names,
		TaskLimiters:       make(map[string]*ratelimit.Limiter),
		Breakers:           make(map[string]breaker.Policy),
		Events:             c.events,
		GlobalLimits:       rules.Engine(), // runtime/admission
		LimitBy:            rules.By(),
		WideLimits:         rules.Wide(),
		Wake:               c.wake,
		Now:                c.now,
		Log:                c.log,
		Exec:               c.exec,
		CleanupInterval:    engine.CleanupInterval(c.cfg.CompletedRetention),
		StuckTimeout:       c.cfg.StuckTimeout,
		CompletedRetention: c.cfg.CompletedRetention,
		CleanupAge:         c.cfg.CleanupAge,
		Alerts:             c.alerts,
		Renames:            c.renames,
		Registry: &engine.Registry{Store: c.st, Key: engine.NewRegistryKey(c.cfg.WorkerID), Every: c.registryRefresh(),
			TTL: c.registryTTL(), Now: c.now, Log: c.log, Info: c.registryInfo()},
	}
	cfg.WorkflowEnds = &engine.WorkflowEnds{Store: c.st, Events: c.events, Every: engine.WorkflowEndsInterval(c.cfg.RecoveryInterval), Log: c.log}
	if c.claimAuto {
		cfg.ClaimMax = min(maxAutoClaim, autoClaimFactor*c.cfg.Workers)
	}
	if r := c.cfg.RateLimit; r.Limit > 0 {
		l, err := ratelimit.New(r.Limit, r.Per, 0)
		if err != nil {
			return nil, &ConfigError{"RateLimit", err.Error()}
		}
		cfg.Limiter = l
	}
	for name, h := range c.handlers {
		if r := h.Options.RateLimit; r.Limit > 0 {
			l, err := ratelimit.New(r.Limit, r.Per, 0)
			if err != nil {
				return nil, fmt.Errorf("%w: handler %q: %v", ErrInvalidConfig, name, err)
			}
			cfg.TaskLimiters[name] = l
		}
	}
	names := c.names
	if names == nil {
		names = []string{""}
	}
	for _, name := range names {
		p := breaker.Policy{Threshold: c.cfg.CircuitThreshold, Timeout: c.cfg.CircuitTimeout}
		if h := c.handlers[name]; p.Threshold < 0 || (h != nil && h.Options.CircuitOff) {
			p.Threshold = 0 // off: never opens
		}
		cfg.Breakers[name] = p
	}
	if c.cfg.Autoscale != nil {
		p := c.cfg.Autoscale.WithDefaults()
		if err := p.Validate(); err != nil {
			return nil, &ConfigError{"Autoscale", err.Error()}
		}
		cfg.Autoscale = &p
	}
	if len(c.cfg.Queues) > 0 {
		cfg.Queues = make(map[string]int, len(c.cfg.Queues))
		for name, q := range c.cfg.Queues {
			cfg.Queues[name] = q.MaxWorkers
		}
	}
	sched, err := c.newScheduler()
	if err != nil {
		return nil, err
	}
	if sched.Len() > 0 {
		cfg.Periodic = sched
	}
	w.Engine = engine.New(cfg)
	return w, nil
}

// Run processes jobs until ctx ends, then drains: it stops claiming, lets
// running jobs finish for up to Config.DrainTimeout, cancels the rest and
// returns them to pending without spending an attempt; a handler that
// ignores cancellation for ShutdownGrace more is abandoned (its job runs
// again once its lease lapses), so Run returns within DrainTimeout plus
// ShutdownGrace. While it runs it renews running jobs' heartbeats, recovers orphans every
// Config.RecoveryInterval, deletes jobs older than Config.CleanupAge every
// hour, raises alerts and runs the periodic scheduler. It returns nil after
// a drain caused by ctx, and only after every goroutine it started has
// exited. Only one Run may be active per Client (ErrRunning). The engine
// itself lives in runtime/engine.
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
	e, err := c.newEngine()
	if err != nil {
		return err
	}
	c.engine.Store(e)
	// The task catalogue (catalog.go) before the first claim; the engine
	// renames the jobs stored under earlier names then.
	if err := c.publishCatalog(ctx); err != nil {
		c.log.WarnContext(ctx, "queuemax: cannot publish the task catalogue", "error", err)
	}
	c.log.InfoContext(ctx, "queuemax started", "worker_id", c.cfg.WorkerID, "shards", c.cfg.Shards,
		"workers", e.Stats().Concurrency, "tasks", len(c.handlers))
	e.Run(ctx)
	s := e.Stats()
	c.log.InfoContext(context.WithoutCancel(ctx), "queuemax stopped", "processed", s.Processed, "failed", s.Failed, "retried", s.Retried)
	return nil
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
	e.Stop()
	select {
	case <-e.Done():
		return nil
	case <-ctx.Done():
		e.Abort()
		return context.Cause(ctx)
	}
}

// WaitIdle blocks until Run has no job running and no job of any task is
// ready to claim (scheduled jobs are not waited for), or until ctx ends. It
// checks every 20ms. A check that cannot read a shard returns an error
// wrapping ErrShardUnavailable, never a false "idle".
func (c *Client) WaitIdle(ctx context.Context) error {
	active := func() int {
		if e := c.engine.Load(); e != nil {
			return e.Active()
		}
		return 0
	}
	return engine.WaitIdle(ctx, c.st, active, ErrShardUnavailable)
}

// WorkerStats returns the statistics of the current (or last) Run, and
// false if Run has never started.
func (c *Client) WorkerStats() (WorkerStats, bool) {
	e := c.engine.Load()
	if e == nil {
		return WorkerStats{}, false
	}
	return e.WorkerStats(c.cfg.WorkerID, c.now()), true
}

// fillStats adds the running engine's rate-limit and breaker state to s.
func fillStats(e *engine.Engine, s *Stats) {
	if l := e.Limiter(); l != nil {
		s.TokensAvailable = l.Remaining()
	}
	s.Circuits, s.CircuitState, s.CircuitFailures = e.CircuitSummary()
}

// newExecutor builds the Executor that runs and finishes the client's
// jobs: Run's engine, Work, Complete and Fail all go through it.
func (c *Client) newExecutor() *engine.Executor {
	toEngine := func(h *Handler) *engine.Handler {
		o := h.Options
		return &engine.Handler{Func: h.Func, Timeout: o.Timeout, RetryOn: o.RetryOn, InlineRetries: o.InlineRetries}
	}
	hs := make(map[string]*engine.Handler, len(c.handlers))
	for name, h := range c.handlers {
		hs[name] = toEngine(h)
	}
	var def *engine.Handler
	if c.defaultH != nil {
		def = toEngine(c.defaultH)
	}
	var mws []WorkMiddleware
	for _, m := range c.cfg.Middleware {
		if wm, ok := m.(WorkMiddleware); ok {
			mws = append(mws, wm)
		}
	}
	return engine.NewExecutor(engine.ExecConfig{
		Store:         c.st,
		Handlers:      hs,
		Default:       def,
		Middleware:    mws,
		Hooks:         c.cfg.Hooks,
		Events:        c.events,
		RetryDelay:    c.cfg.RetryDelay,
		MaxSnoozes:    c.cfg.MaxSnoozes,
		KeepCompleted: c.cfg.CompletedRetention > 0,
		Wake:          c.wake,
		Now:           c.now,
		Log:           c.log,
	})
}
