package queuemax

import (
	"context"
	"slices"
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
// "half_open") in the running (or last) Run, read from memory; nil if Run
// has never started. Stats.Circuits holds the same.
func (c *Client) CircuitStates() map[string]string {
	e := c.engine.Load()
	if e == nil {
		return nil
	}
	bs, _ := e.Breakers()
	out := make(map[string]string, len(bs))
	for name, b := range bs {
		out[name] = b.Stats().State.String()
	}
	return out
}
