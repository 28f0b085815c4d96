package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// outageRepeat is how often a service that keeps failing says so again;
// a service that has not failed for outageQuiet (and whose successes are
// not reported) starts a new outage at its next failure.
const (
	outageRepeat = time.Minute
	outageQuiet  = 30 * time.Second
)

// outages keeps the logs of an outage (the database down, a failover)
// bounded: the first failure of a service is logged, the next ones are
// only counted, a service still failing says so once per outageRepeat
// with the count, and its first success after failures logs one line
// with the count and the outage's length. A per-job failure (a
// completion that could not be recorded) counts under its service's
// name too, so an outage logs a few lines per service, never one per job
// or heartbeat. Lost leases (acknowledgements the fence refused, after an
// outage or a partition) count the same way under "lost leases", an
// outage that only ends by quiet (outageQuiet); WorkerStats counts them
// all.
type outages struct {
	log    *slog.Logger
	active atomic.Int32 // services failing now: ok is a load when zero
	mu     sync.Mutex
	m      map[string]*outage
}

type outage struct {
	since, said, last time.Time
	failures          int64
}

func newOutages(log *slog.Logger) *outages {
	return &outages{log: log, m: make(map[string]*outage)}
}

// fail records a failure of service; msg and attrs are the line logged at
// level for the first failure of an outage (with err).
func (o *outages) fail(ctx context.Context, level slog.Level, service, msg string, err error, attrs ...any) {
	now := time.Now()
	o.mu.Lock()
	u := o.m[service]
	if u != nil && now.Sub(u.last) >= outageQuiet {
		*u = outage{} // quiet for long: a new outage
	}
	first := u == nil || u.failures == 0
	if u == nil {
		u = &outage{}
		o.m[service] = u
		o.active.Add(1)
	}
	if first {
		u.since, u.said = now, now
	}
	u.failures++
	u.last = now
	again := !first && now.Sub(u.said) >= outageRepeat
	if again {
		u.said = now
	}
	n, since := u.failures, u.since
	o.mu.Unlock()
	switch {
	case first:
		o.log.Log(ctx, level, msg, append(append(attrs, "err", err), "service", service)...)
	case again:
		o.log.Log(ctx, level, msg+" (still failing)", "service", service, "failures", n,
			"for", now.Sub(since).Round(time.Millisecond), "err", err)
	}
}

// ok records a success of service, ending its outage if it had one.
func (o *outages) ok(ctx context.Context, service string) {
	if o.active.Load() == 0 {
		return
	}
	o.mu.Lock()
	u := o.m[service]
	if u != nil {
		delete(o.m, service)
		o.active.Add(-1)
	}
	o.mu.Unlock()
	if u != nil {
		o.log.InfoContext(ctx, service+" recovered", "service", service, "failures", u.failures,
			"outage", time.Since(u.since).Round(time.Millisecond))
	}
}

// Outage reports a failure (err not nil) or a success of a service the
// engine does not run itself (one the client runs at its recovery passes)
// to the engine's outage log: one line when it starts failing, a reminder
// with the count each minute, one line when it recovers.
func (e *Engine) Outage(ctx context.Context, service, msg string, err error) {
	if err != nil {
		e.out.fail(ctx, slog.LevelWarn, service, msg, err)
		return
	}
	e.out.ok(ctx, service)
}

// Fail and OK are fail and ok for the engine's admission
// (admission.Outages).
func (o *outages) Fail(ctx context.Context, level slog.Level, service, msg string, err error, attrs ...any) {
	o.fail(ctx, level, service, msg, err, attrs...)
}

// OK is ok; see Fail.
func (o *outages) OK(ctx context.Context, service string) { o.ok(ctx, service) }
