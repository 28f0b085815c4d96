package queuemax

import (
	"context"
	"errors"
	"time"

	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/store"
)

// HealthStatus is the overall verdict of a Health check.
type HealthStatus string

// Health verdicts, from best to worst.
const (
	// HealthOK: the queue works and no task's dependency is down.
	HealthOK HealthStatus = "ok"
	// HealthDegraded: the queue works, but the circuit breaker of one or
	// more tasks is open (or probing): their dependency is down and their
	// jobs wait, while every other task runs. Not an outage of the system.
	HealthDegraded HealthStatus = "degraded"
	// HealthUnhealthy: the queue itself does not work: a shard (or the
	// database) cannot be read, or jobs wait that no live worker runs.
	HealthUnhealthy HealthStatus = "unhealthy"
)

// Health separates "the queue works" from "a dependency is down". Problems
// say why the queue does not work (Status unhealthy); Degraded lists the
// tasks whose breaker holds their jobs (Status degraded when there is no
// problem). See Client.Health.
type Health struct {
	Status HealthStatus `json:"status"`
	// Problems are the reasons for HealthUnhealthy, one sentence each.
	Problems []string `json:"problems,omitempty"`
	// Degraded are the tasks whose circuit breaker is open or half-open.
	Degraded []DegradedTask `json:"degraded,omitempty"`
	// Workers counts the live entries of the worker registry.
	Workers int `json:"workers"`
	// CheckedAt is when the check ran.
	CheckedAt time.Time `json:"checked_at"`
}

// DegradedTask is one task whose dependency is down: its breaker's state,
// when it lets a probe through, and the last counted failure.
type DegradedTask struct {
	Task      string    `json:"task"`
	Breaker   string    `json:"breaker"` // open or half_open
	OpenUntil time.Time `json:"open_until,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

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
	h := Health{CheckedAt: c.now()}
	s, err := c.Stats(ctx)
	if err := ctx.Err(); err != nil {
		return Health{}, context.Cause(ctx)
	}
	h.Problems = engine.HealthProblems(err, s.PerShard, s.Tasks, ErrShardUnavailable)
	h.Workers = len(s.Workers)
	for _, b := range s.Breakers {
		if b.State == store.BreakerOpen || b.State == store.BreakerHalfOpen {
			h.Degraded = append(h.Degraded, DegradedTask{Task: b.Task, Breaker: b.State, OpenUntil: b.OpenUntil, LastError: b.LastError})
		}
	}
	switch {
	case len(h.Problems) > 0:
		h.Status = HealthUnhealthy
	case len(h.Degraded) > 0:
		h.Status = HealthDegraded
	default:
		h.Status = HealthOK
	}
	return h, nil
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
