package queuemax

import (
	"context"
	"errors"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
)

// HealthStatus is the overall verdict of a Health check; see
// queuemaxtype.HealthStatus.
type HealthStatus = queuemaxtype.HealthStatus

// Health verdicts, from best to worst; see queuemaxtype.HealthOK and the
// others for what each means.
const (
	HealthOK        = queuemaxtype.HealthOK
	HealthDegraded  = queuemaxtype.HealthDegraded
	HealthUnhealthy = queuemaxtype.HealthUnhealthy
)

// Health separates "the queue works" from "a dependency is down"; see
// queuemaxtype.Health for its fields.
type Health = queuemaxtype.Health

// DegradedTask is one task whose dependency is down; see
// queuemaxtype.DegradedTask for its fields.
type DegradedTask = queuemaxtype.DegradedTask

// Health checks the queue as an operator means it. It is HealthUnhealthy
// when a shard (or the PostgreSQL database) cannot be read, or when a task
// has pending jobs and no live worker runs it (every worker is down, or
// none was deployed for it); HealthDegraded when the queue works but a
// task's circuit breaker is open or half-open (the task's dependency is
// down: its jobs wait, every other task runs); HealthOK otherwise. An open
// breaker never makes the system unhealthy. The error is non-nil only when
// the check itself could not run (ctx ended, the client is closed);
// unreadable shards are Problems, not an error.
func (c *Client) Health(ctx context.Context) (Health, error) {
	if c.closed.Load() {
		return Health{Status: HealthUnhealthy, Problems: []string{"the client is closed"}, CheckedAt: c.now()}, ErrClosed
	}
	checked := c.now()
	s, err := c.Stats(ctx)
	if err := ctx.Err(); err != nil {
		return Health{}, context.Cause(ctx)
	}
	return engine.Health(checked, err, s.PerShard, s.Tasks, len(s.Workers), s.Breakers, ErrShardUnavailable), nil
}

// Ready reports whether this client can serve: its store answers (every
// shard readable) and, when this client's Run was started, it is running
// rather than draining. It is what a Kubernetes readiness probe should ask
// (queuemaxhttp's /readyz); it ignores breakers and other processes'
// workers, so one dependency's outage never takes every pod out.
func (c *Client) Ready(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := engine.StoreReady(ctx, c.st, ErrShardUnavailable); err != nil {
		return err
	}
	if e := c.engine.Load(); e != nil {
		if st := WorkerState(e.Stats().State); st == WorkerStopping {
			return errors.New("queuemax: workers are draining")
		}
	}
	return nil
}
