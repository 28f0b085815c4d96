package queuemax

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/ratelimit"
)

// WorkerInfo is one running process's entry in the live worker registry,
// which every Run writes into the store (shard 0 for SQLite) before it
// claims anything, refreshes every Config.HeartbeatInterval (at least
// every RegistryMinRefresh apart) and removes when it stops cleanly. An
// entry whose process died expires RegistryTTL refresh intervals after its
// last refresh, or Config.StuckTimeout after it if that is later (the
// bound after which orphan recovery takes the process's jobs back).
// Breakers and RateLimits are the process's state as of UpdatedAt.
type WorkerInfo struct {
	// ID is the process's Config.WorkerID (the worker_id of its claims).
	ID        string    `json:"id"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"` // when its Run started
	UpdatedAt time.Time `json:"updated_at"` // its last refresh
	ExpiresAt time.Time `json:"expires_at"` // when the entry lapses without a refresh
	// Tasks are the task names it runs, sorted; empty means every task (a
	// catch-all handler).
	Tasks       []string `json:"tasks"`
	Concurrency int      `json:"concurrency"` // jobs it may run at once
	Running     int      `json:"running"`     // handlers executing at the last refresh
	// Breakers maps each task (or "" for a catch-all) to its circuit
	// breaker's state: closed, open or half_open.
	Breakers map[string]string `json:"breakers"`
	// RateLimits maps each rate-limited task to its limiter; the key "*"
	// is the process-wide Config.RateLimit.
	RateLimits map[string]RateLimitInfo `json:"rate_limits,omitempty"`
	// Schemas maps each task it runs through Define or DefineResult to
	// the JSON Schema of its payload (see PayloadSchema). A client with no
	// handler of a task (the queuemax CLI, the admin API of a producer)
	// checks each payload of it against the schemas the live workers
	// publish, and refuses one that fits none.
	Schemas map[string]json.RawMessage `json:"schemas,omitempty"`
}

// Handles reports whether the worker runs task.
func (w WorkerInfo) Handles(task string) bool {
	return len(w.Tasks) == 0 || slices.Contains(w.Tasks, task)
}

// RateLimitInfo is one token-bucket rate limiter's state.
type RateLimitInfo struct {
	Limit  int     `json:"limit"`  // tokens per Per
	Per    string  `json:"per"`    // a Go duration, such as "1m0s"
	Tokens float64 `json:"tokens"` // available now
	// Denied counts the claims the limiter held back for want of a token
	// since the process started: jobs that waited.
	Denied uint64 `json:"denied"`
}

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

// workerSeq tells apart the registry keys of several Runs in one process.
var workerSeq atomic.Int64

// newRegistryKey returns a registry row key for one Run: the worker ID,
// made unique per Run so that two clients of one process (same default
// WorkerID) do not overwrite each other. newEngine sets it once, before
// any goroutine reads it.
func newRegistryKey(workerID string) string {
	return workerID + "#" + strconv.FormatInt(workerSeq.Add(1), 10)
}

// workerInfo describes this engine for the registry.
func (e *worker) workerInfo(now time.Time) WorkerInfo {
	host, _ := os.Hostname()
	ttl := e.c.registryTTL()
	es := e.Stats()
	breakers, _ := e.BreakerStats()
	limiter, limiters := e.Limiter(), e.TaskLimiters()
	w := WorkerInfo{
		ID: e.c.cfg.WorkerID, Host: host, PID: os.Getpid(),
		StartedAt: es.StartedAt, UpdatedAt: now, ExpiresAt: now.Add(ttl),
		Tasks:       slices.Sorted(slices.Values(e.c.names)),
		Concurrency: es.Concurrency,
		Running:     es.Running,
		Breakers:    make(map[string]string, len(breakers)),
	}
	if w.Tasks == nil {
		w.Tasks = []string{}
	}
	for name, st := range breakers {
		w.Breakers[name] = st.State.String()
	}
	for name, h := range e.c.handlers {
		if h.args != nil {
			if w.Schemas == nil {
				w.Schemas = make(map[string]json.RawMessage)
			}
			w.Schemas[name] = PayloadSchema(h.args)
		}
	}
	if limiter != nil || len(limiters) > 0 {
		w.RateLimits = make(map[string]RateLimitInfo)
	}
	if limiter != nil {
		w.RateLimits["*"] = limiterInfo(limiter.Stats())
	}
	for name, l := range limiters {
		w.RateLimits[name] = limiterInfo(l.Stats())
	}
	return w
}

func limiterInfo(st ratelimit.Stats) RateLimitInfo {
	return RateLimitInfo{Limit: st.Limit, Per: st.Per.String(), Tokens: st.Tokens, Denied: st.Denied}
}

// describe is this engine's registry entry as JSON, for the engine's
// Registry service (runtime/engine/registry.go), which writes it.
func (e *worker) describe(now, expires time.Time) (json.RawMessage, time.Time, error) {
	w := e.workerInfo(now)
	w.ExpiresAt = expires
	info, err := json.Marshal(w)
	return info, w.StartedAt, err
}

// Workers returns the live entries of the worker registry: every process
// whose Run is active on this queue (or died less than RegistryTTL
// heartbeat intervals ago), ordered by ID.
func (c *Client) Workers(ctx context.Context) ([]WorkerInfo, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	recs, err := c.st.WorkerList(ctx, c.now())
	if err != nil {
		return nil, fmt.Errorf("queuemax: list workers: %w", err)
	}
	out := make([]WorkerInfo, 0, len(recs))
	for _, r := range recs {
		var w WorkerInfo
		if err := json.Unmarshal(r.Info, &w); err != nil {
			return nil, fmt.Errorf("queuemax: worker registry entry %q: %w", r.ID, err)
		}
		if w.ID == "" {
			w.ID = r.ID
		}
		w.StartedAt, w.UpdatedAt, w.ExpiresAt = r.StartedAt, r.UpdatedAt, r.ExpiresAt
		out = append(out, w)
	}
	slices.SortStableFunc(out, func(a, b WorkerInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return a.StartedAt.Compare(b.StartedAt)
	})
	return out, nil
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

// warnUnhandled logs, once per task until it recovers, every task with
// pending jobs that no live worker runs (a misspelt or renamed task, a
// service that is down). Run's maintenance calls it every
// Config.RecoveryInterval.
func (e *worker) warnUnhandled(ctx context.Context) {
	var s Stats
	if err := e.c.fillRegistry(ctx, &s, true); err != nil {
		return
	}
	now := make(map[string]bool)
	for task, ti := range s.Tasks {
		if ti.Pending == 0 || ti.Workers > 0 || len(e.c.names) == 0 || slices.Contains(e.c.names, task) {
			continue // this engine runs it, even before its first registry write
		}
		now[task] = true
		if !e.warned[task] {
			e.c.log.WarnContext(ctx, "task has pending jobs and no live worker runs it", "task", task, "pending", ti.Pending)
		}
	}
	e.warned = now
}
