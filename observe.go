package queuemax

import (
	"context"
	"log/slog"
	"slices"

	"github.com/queuemax/queuemax/runtime/breaker"
)

// JobCounts returns how many jobs each shard holds per task and status
// (counts of zero are left out), for metrics exporters. Dead-letter rows are
// not jobs and are left out (Stats counts them per shard). With the SQLite
// store it reads each shard's queue table once (there is no index on task:
// it would slow every insert), with PostgreSQL it groups the jobs table:
// either costs about as much as scanning the queue's rows, never their
// payloads, so cache it, as the queuemaxprom and queuemaxotel collectors do.
func (c *Client) JobCounts(ctx context.Context) ([]JobCount, error) {
	rows, err := c.st.JobCounts(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rows, JobCount.IsDeadLetters), nil
}

// RateLimitWaits returns, for each task with a TaskOptions.RateLimit, how
// many claim rounds of the running (or last) Run left the task out because
// its rate limit had no token: a rising count means jobs wait for the
// limit. It returns nil if Run has never started.
func (c *Client) RateLimitWaits() map[string]int64 {
	e := c.engine.Load()
	if e == nil {
		return nil
	}
	return e.RateLimitWaits()
}

// CircuitStates returns each task breaker's state ("closed", "open" or
// "half_open") as the running (or last) Run last read the stored breaker
// (at most about a second old), from memory; nil if Run has never
// started. CircuitBreakers reads the store itself.
func (c *Client) CircuitStates() map[string]string {
	e := c.engine.Load()
	if e == nil {
		return nil
	}
	circuits, _, _ := e.CircuitSummary()
	return circuits
}

// CountsByTask is JobCounts plus, for each shard and task with dead
// letters, a row counting them (JobCount.IsDeadLetters reports which): what
// the dashboard's task table shows. It costs what JobCounts costs.
func (c *Client) CountsByTask(ctx context.Context) ([]JobCount, error) {
	return c.st.JobCounts(ctx)
}

// ShardStats reads each shard's counts and lifetime totals from the store,
// without the registry and breaker figures Stats adds: the cheap read for
// a poller. A shard it could not read is returned with Healthy false.
func (c *Client) ShardStats(ctx context.Context) ([]ShardStats, error) {
	return c.st.Stats(ctx)
}

// Tasks returns the names of the tasks this client has handlers for,
// sorted (the catch-all Config.DefaultHandler is not listed).
func (c *Client) Tasks() []string {
	out := make([]string, 0, len(c.handlers))
	for name := range c.handlers {
		if name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// CircuitBreakerStats is a snapshot of one circuit breaker.
type CircuitBreakerStats = breaker.Stats

// TaskBreaker is one task's circuit breaker in the running (or last) Run.
// Task is "" for the breaker of Config.DefaultHandler.
type TaskBreaker struct {
	Task  string
	Stats CircuitBreakerStats
}

// Breakers returns every task breaker of the running (or last) Run, in the
// order of their names, as Run last read the stored breakers (at most
// about a second old; StateChanges and TotalOpen count what this process
// saw, Rejected is zero: the store's breakers hold jobs, they reject no
// call), and whether Run
// has ever started in this process (false: no breaker exists yet). The
// stored breakers, which every process shares, are CircuitBreakers.
func (c *Client) Breakers() ([]TaskBreaker, bool) {
	e := c.engine.Load()
	if e == nil {
		return nil, false
	}
	bs, order := e.BreakerStats()
	out := make([]TaskBreaker, 0, len(order))
	for _, name := range order {
		out = append(out, TaskBreaker{Task: name, Stats: bs[name]})
	}
	return out, true
}

// Logger returns the logger the client writes to (Config.Logger, or the
// default it chose), for add-ons that log on its behalf.
func (c *Client) Logger() *slog.Logger { return c.log }
