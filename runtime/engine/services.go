package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Service is one of the engine's loops: Run calls RunOnce at once and then
// every Interval until the service's context ends. Tests call RunOnce
// directly with a fixed clock.
type Service interface {
	Name() string
	Interval() time.Duration
	RunOnce(ctx context.Context, now time.Time)
}

// Closer is a Service with work to do when it stops (e.g. removing a
// registry entry); run calls Close after the service's context ended.
type Closer interface {
	Close(ctx context.Context)
}

// run is the start/stop discipline every ticking service shares.
func run(ctx context.Context, s Service) {
	if c, ok := s.(Closer); ok {
		defer c.Close(ctx)
	}
	d := s.Interval()
	if d <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		s.RunOnce(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// heartbeater renews the heartbeats of every job the engine holds. A job
// whose lease was lost is cancelled: another worker owns it now. Its first
// round is one interval after start (claims stamp a fresh heartbeat).
type heartbeater struct {
	e       *Engine
	started bool
}

func (h *heartbeater) Name() string            { return "heartbeater" }
func (h *heartbeater) Interval() time.Duration { return h.e.cfg.HeartbeatInterval }

func (h *heartbeater) RunOnce(ctx context.Context, now time.Time) {
	if !h.started { // claims stamp a fresh heartbeat: skip the round at start
		h.started = true
		return
	}
	h.e.renew(ctx)
}

// renew renews the heartbeats of every job the engine holds, cancelling
// those whose lease was lost.
func (e *Engine) renew(ctx context.Context) {
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
		ls[i] = Lease(rj.job)
	}
	failed, first := 0, -1
	var firstErr error
	for i, err := range e.cfg.Store.Heartbeat(ctx, ls, e.cfg.Now()) {
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			rjs[i].lost.Store(true)
			rjs[i].cancel(store.ErrLeaseLost)
		case errors.Is(err, store.ErrCancelRequested):
			requestCancel(rjs[i])
		case err != nil && ctx.Err() == nil:
			if failed++; first < 0 {
				first, firstErr = i, err
			}
		}
	}
	if failed > 0 {
		// One line for the round, and only for the first failing round
		// of an outage (outage.go).
		e.out.fail(ctx, slog.LevelWarn, "heartbeats", "heartbeat failed", firstErr, "job_id", int64(rjs[first].job.ID), "jobs", failed)
	} else if ctx.Err() == nil {
		e.out.ok(ctx, "heartbeats")
	}
}

// rescuer recovers orphans: jobs whose heartbeat is older than the stuck
// timeout. It renews this engine's own leases first, so that a heartbeat
// round starved under load cannot let it take back jobs still running here.
type rescuer struct{ e *Engine }

func (r *rescuer) Name() string            { return "rescuer" }
func (r *rescuer) Interval() time.Duration { return r.e.cfg.RecoveryInterval }

func (r *rescuer) RunOnce(ctx context.Context, now time.Time) {
	e := r.e
	if e.cfg.StuckTimeout <= 0 {
		return
	}
	e.renew(ctx)
	res, err := e.cfg.Store.RecoverOrphans(ctx, now.Add(-e.cfg.StuckTimeout), now)
	switch {
	case err != nil && ctx.Err() == nil:
		e.out.fail(ctx, slog.LevelWarn, "orphan recovery", "orphan recovery failed", err)
	case err == nil && res.Requeued+res.DeadLettered > 0:
		e.out.ok(ctx, "orphan recovery")
		e.log.WarnContext(ctx, "recovered orphaned jobs", "requeued", res.Requeued, "dead_lettered", res.DeadLettered)
	case err == nil:
		e.out.ok(ctx, "orphan recovery")
	}
	if res.Requeued > 0 && e.cfg.Wake != nil {
		select {
		case e.cfg.Wake <- struct{}{}:
		default:
		}
	}
}

// maintenance deletes old jobs every CleanupInterval and checks the alert
// threshold every RecoveryInterval.
type maintenance struct {
	e           *Engine
	lastCleanup time.Time
	started     bool // the first round (at Run's start) has passed
}

func (m *maintenance) Name() string            { return "maintenance" }
func (m *maintenance) Interval() time.Duration { return m.e.cfg.RecoveryInterval }

func (m *maintenance) RunOnce(ctx context.Context, now time.Time) {
	e := m.e
	if e.cfg.CleanupAge > 0 && (m.lastCleanup.IsZero() || now.Sub(m.lastCleanup) >= e.cfg.CleanupInterval) {
		m.lastCleanup = now
		res, err := e.cfg.Store.Prune(ctx, PruneParams(now, e.cfg.CompletedRetention, e.cfg.CleanupAge))
		switch {
		case err != nil && ctx.Err() == nil:
			e.out.fail(ctx, slog.LevelWarn, "cleanup", "cleanup failed", err)
		case err == nil && res.Jobs+res.DeadLetters > 0:
			e.log.InfoContext(ctx, "cleaned up old jobs", "jobs", res.Jobs, "dead_letters", res.DeadLetters)
		}
	}
	e.cfg.Alerts.Check(ctx, true)
	// Run's start adopted renamed tasks' jobs and warned a moment ago.
	if m.started {
		e.tasks(ctx)
	}
	m.started = true
}

// autoscaler adjusts how many jobs may run at once by the backlog.
type autoscaler struct {
	e    *Engine
	last time.Time // the last change
}

func (a *autoscaler) Name() string            { return "autoscaler" }
func (a *autoscaler) Interval() time.Duration { return a.e.cfg.Autoscale.CheckInterval }

func (a *autoscaler) RunOnce(ctx context.Context, now time.Time) {
	e := a.e
	s, err := e.cfg.Store.Stats(ctx)
	if err != nil {
		return
	}
	var pending int64
	for _, sh := range s {
		pending += sh.Pending
	}
	cur := int(e.limit.Load())
	target := e.cfg.Autoscale.Target(cur, pending, now.Sub(a.last), !a.last.IsZero())
	if target == cur {
		return
	}
	e.limit.Store(int64(target))
	a.last = now
	e.log.InfoContext(ctx, "autoscaled workers", "from", cur, "to", target, "pending", pending)
	e.signalSlot()
}

// scheduler runs the periodic scheduler while the engine claims.
type scheduler struct {
	e *Engine
	p Periodic
}

func newScheduler(e *Engine) *scheduler { return &scheduler{e: e, p: e.cfg.Periodic} }

// RunOnce fires the slots due at now and returns when the next one is.
func (s *scheduler) RunOnce(ctx context.Context, now time.Time) time.Time {
	next, err := s.p.Tick(ctx, now)
	if err != nil && ctx.Err() == nil {
		s.e.out.fail(ctx, slog.LevelWarn, "periodic scheduler", "periodic scheduler", err)
	} else if err == nil {
		s.e.out.ok(ctx, "periodic scheduler")
	}
	return next
}

func (s *scheduler) run(ctx context.Context) {
	if err := s.p.Register(ctx, s.p.Now()); err != nil {
		if ctx.Err() == nil {
			s.e.log.ErrorContext(ctx, "periodic scheduler stopped", "err", err)
		}
		return
	}
	for {
		next := s.RunOnce(ctx, s.p.Now())
		timer := time.NewTimer(max(next.Sub(s.p.Now()), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// PruneParams are what a cleanup at now deletes: completed jobs older than
// completedRetention (CleanupAge when it is zero or negative), except those
// that stored a result, which are kept for cleanupAge at least; failed and
// cancelled jobs and dead letters older than cleanupAge.
func PruneParams(now time.Time, completedRetention, cleanupAge time.Duration) store.PruneParams {
	completed := completedRetention
	if completed <= 0 {
		completed = cleanupAge
	}
	// A stored result is kept for cleanupAge at least, as before retention
	// existed: Result[T] may read it later than the retention.
	return store.PruneParams{CompletedBefore: now.Add(-completed),
		KeepResultsAfter: now.Add(-max(completed, cleanupAge)), FinishedBefore: now.Add(-cleanupAge)}
}

// CleanupInterval is how often maintenance cleans up: hourly, or every
// half retention when that is shorter (but at most once a minute), so a
// completed job outlives its retention by at most half of it and each
// cleanup deletes a bounded slice of the kept jobs.
func CleanupInterval(retention time.Duration) time.Duration {
	if retention > 0 && retention < 2*time.Hour {
		return max(retention/2, time.Minute)
	}
	return time.Hour
}

// WorkflowEndsInterval is how often Run looks for workflow ends that no
// process of ours recorded (orphan recovery, queue-max): every second, or
// every recovery interval when that is shorter.
func WorkflowEndsInterval(recovery time.Duration) time.Duration {
	if recovery > 0 && recovery < time.Second {
		return recovery
	}
	return time.Second
}
