package queuemax

import (
	"context"

	"github.com/queuemax/queuemax/runtime/store"
)

// JobCounts returns how many jobs each shard holds per task and status
// (counts of zero are left out), for metrics exporters. With the SQLite
// store it reads each shard's queue table once (there is no index on task:
// it would slow every insert), so it costs about as much as scanning the
// queue's rows, never their payloads: cache it, as the queuemaxprom and
// queuemaxotel collectors do. A store that cannot count by task returns
// per-shard counts with an empty Task.
func (c *Client) JobCounts(ctx context.Context) ([]JobCount, error) {
	if jc, ok := c.st.(store.JobCounter); ok {
		return jc.JobCounts(ctx)
	}
	ss, err := c.st.Stats(ctx)
	if err != nil {
		return nil, err
	}
	var out []JobCount
	for _, s := range ss {
		for st, n := range map[Status]int64{StatusPending: s.Pending, StatusScheduled: s.Scheduled,
			StatusProcessing: s.Processing, StatusFailed: s.Failed, StatusCompleted: s.Completed} {
			if n > 0 {
				out = append(out, JobCount{Shard: s.Shard, Status: st, Count: n})
			}
		}
	}
	return out, nil
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
	out := make(map[string]int64, len(e.rlWaits))
	for name, n := range e.rlWaits {
		out[name] = n.Load()
	}
	return out
}

// CircuitStates returns each task breaker's state ("closed", "open" or
// "half_open") in the running (or last) Run, read from memory; nil if Run
// has never started. Stats.Circuits holds the same.
func (c *Client) CircuitStates() map[string]string {
	e := c.engine.Load()
	if e == nil {
		return nil
	}
	out := make(map[string]string, len(e.breakers))
	for name, b := range e.breakers {
		out[name] = b.Stats().State.String()
	}
	return out
}
