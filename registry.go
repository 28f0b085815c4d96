package queuemax

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/engine"
)

// WorkerInfo is one running process's entry in the live worker registry;
// see queuemaxtype.WorkerInfo
// (go doc github.com/queuemax/queuemax/queuemaxtype.WorkerInfo) for its
// fields and methods.
type WorkerInfo = queuemaxtype.WorkerInfo

// RateLimitInfo is one token-bucket rate limiter's state; see
// queuemaxtype.RateLimitInfo.
type RateLimitInfo = queuemaxtype.RateLimitInfo

// Worker registry timing; see WorkerInfo.
const (
	// RegistryTTL is how many refresh intervals a worker registry entry
	// stays live without a refresh (at least Config.StuckTimeout).
	RegistryTTL = 3
	// RegistryMinRefresh is the shortest interval between two refreshes
	// of an entry, however short Config.HeartbeatInterval is.
	RegistryMinRefresh = time.Second
)

// registryRefresh returns how often Run refreshes its registry entry.
func (c *Client) registryRefresh() time.Duration {
	return max(c.cfg.HeartbeatInterval, RegistryMinRefresh)
}

// registryTTL returns how long an entry lives without a refresh.
func (c *Client) registryTTL() time.Duration {
	return max(RegistryTTL*c.registryRefresh(), c.cfg.StuckTimeout)
}

// registryInfo is the fixed part of a Run's registry entry: its ID, the
// tasks it runs and their payload schemas.
func (c *Client) registryInfo() WorkerInfo {
	w := WorkerInfo{ID: c.cfg.WorkerID, Tasks: slices.Sorted(slices.Values(c.names))}
	for name, h := range c.handlers {
		if h.args != nil {
			if w.Schemas == nil {
				w.Schemas = make(map[string]json.RawMessage)
			}
			w.Schemas[name] = PayloadSchema(h.args)
		}
	}
	return w
}

// aliases returns each handler's declared earlier names (engine.Renames).
func (c *Client) aliases() map[string][]string {
	out := make(map[string][]string, len(c.handlers))
	for name, h := range c.handlers {
		out[name] = h.Options.Aliases
	}
	return out
}

// workerInfo describes this engine as its registry entry does.
func (e *worker) workerInfo(now time.Time) WorkerInfo { return e.WorkerInfo(now) }

// Workers returns the live entries of the worker registry: every process
// whose Run is active on this queue (or died less than RegistryTTL
// heartbeat intervals ago), ordered by ID.
func (c *Client) Workers(ctx context.Context) ([]WorkerInfo, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return engine.Workers(ctx, c.st, c.now())
}

// TaskInfo is one task's backlog in Stats, with how many live workers run
// it.
type TaskInfo struct {
	Pending   int64 `json:"pending"`
	Scheduled int64 `json:"scheduled"`
	Workers   int   `json:"workers"` // live registry entries that handle the task
}

// fillRegistry adds the per-task backlog, the live workers and, when this
// process runs no engine, their breaker and rate-limit states to s.
func (c *Client) fillRegistry(ctx context.Context, s *Stats, local bool) error {
	workers, err := c.Workers(ctx)
	if err != nil {
		return err
	}
	s.Workers = workers
	backlog, err := c.st.TaskBacklog(ctx)
	if err != nil {
		return err
	}
	s.Tasks = make(map[string]TaskInfo, len(backlog))
	for _, task := range slices.Sorted(maps.Keys(backlog)) {
		b := backlog[task]
		ti := TaskInfo{Pending: b.Pending, Scheduled: b.Scheduled}
		for _, w := range workers {
			if w.Handles(task) {
				ti.Workers++
			}
		}
		s.Tasks[task] = ti
		if ti.Pending > 0 && ti.Workers == 0 {
			name := task
			if name == "" {
				name = `"" (no task name)`
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("task %s has %d pending jobs and no live worker runs it", name, ti.Pending))
		}
	}
	// Uptime is the queue's: since the earliest live worker started, or,
	// with none, since the queue was created.
	var since time.Time
	for _, w := range workers {
		if since.IsZero() || w.StartedAt.Before(since) {
			since = w.StartedAt
		}
	}
	if since.IsZero() {
		if at, err := c.st.CreatedAt(ctx); err == nil {
			since = at
		}
	}
	if !since.IsZero() {
		s.UptimeSeconds = max(0, c.now().Sub(since).Seconds())
	}
	if local || len(workers) == 0 {
		return nil
	}
	// Another process's view: the running workers' states.
	rank := map[string]int{breaker.Closed.String(): 0, breaker.HalfOpen.String(): 1, breaker.Open.String(): 2}
	worst := breaker.Closed.String()
	s.Circuits = make(map[string]string)
	s.RateLimits = nil
	s.RateLimit, s.RateLimitPer, s.TokensAvailable = 0, "", -1
	for _, w := range workers {
		for task, st := range w.Breakers {
			if cur, ok := s.Circuits[task]; !ok || rank[st] > rank[cur] {
				s.Circuits[task] = st
			}
			if rank[st] > rank[worst] {
				worst = st
			}
		}
		for task, rl := range w.RateLimits {
			if s.RateLimits == nil {
				s.RateLimits = make(map[string]RateLimitInfo)
			}
			sum := s.RateLimits[task]
			sum.Limit += rl.Limit
			sum.Per = rl.Per
			sum.Tokens += rl.Tokens
			sum.Denied += rl.Denied
			s.RateLimits[task] = sum
		}
	}
	if g, ok := s.RateLimits["*"]; ok {
		s.RateLimit, s.RateLimitPer, s.TokensAvailable = g.Limit, g.Per, g.Tokens
	}
	s.CircuitState = worst
	return nil
}
