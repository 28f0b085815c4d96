package queuemax

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/enqueue"
)

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

// aliases returns each handler's declared earlier names (enqueue.Renames).
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

// fillRegistry adds the per-task backlog, the live workers and, when this
// process runs no engine, their breaker and rate-limit states to s
// (engine.ReadFleet).
func (c *Client) fillRegistry(ctx context.Context, s *Stats, local bool) error {
	if c.closed.Load() {
		return ErrClosed
	}
	f, err := engine.ReadFleet(ctx, c.st, c.now())
	if err != nil {
		return err
	}
	s.Workers, s.Tasks, s.UptimeSeconds = f.Workers, f.Tasks, f.UptimeSeconds
	s.Warnings = append(s.Warnings, f.Warnings...)
	if local || len(f.Workers) == 0 {
		return nil
	}
	// Another process's view: the running workers' states.
	s.Circuits, s.CircuitState, s.RateLimits = f.Circuits, f.CircuitState, f.RateLimits
	s.RateLimit, s.RateLimitPer, s.TokensAvailable = 0, "", -1
	if g, ok := s.RateLimits["*"]; ok {
		s.RateLimit, s.RateLimitPer, s.TokensAvailable = g.Limit, g.Per, g.Tokens
	}
	return nil
}

// newSchemas builds the check of payloads of tasks this client has no
// handler of, against the schemas live workers publish (see
// enqueue.Schemas).
func (c *Client) newSchemas() *enqueue.Schemas {
	return &enqueue.Schemas{Refresh: c.registryRefresh(), Read: func(ctx context.Context) ([]map[string]json.RawMessage, error) {
		ws, err := c.Workers(ctx)
		out := make([]map[string]json.RawMessage, len(ws))
		for i, w := range ws {
			out[i] = w.Schemas
		}
		return out, err
	}}
}
