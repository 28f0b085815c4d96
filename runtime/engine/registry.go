package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/ratelimit"
	"github.com/queuemax/queuemax/runtime/store"
)

// WorkerInfo is a worker registry entry (the root package re-exports
// the type).
type WorkerInfo = queuemaxtype.WorkerInfo

// Registry is the service that keeps one Run's entry in the store's
// worker registry: it writes the first entry before the engine claims
// anything (so a process that runs jobs is listed), refreshes it every
// Every, and removes it when the engine stops. Failures are logged, never
// fatal: a registry that cannot be written makes the process look absent,
// never stops it from running jobs. Beside maintenance it warns, once per
// task until it recovers, of tasks with pending jobs no live worker runs.
type Registry struct {
	Store store.Store
	Key   string        // the registry row, unique per Run (NewRegistryKey)
	Every time.Duration // refresh interval
	TTL   time.Duration // how long an entry lives without a refresh
	Now   func() time.Time
	Log   *slog.Logger
	// Info is the entry's fixed part: ID, Tasks (sorted, not nil) and
	// Schemas; the engine fills in the rest at each write.
	Info WorkerInfo

	e       *Engine         // set by New
	started bool            // RunOnce's first round (at start, RegisterFirst's) has passed; RunOnce's goroutine only
	failing bool            // RunOnce's goroutine only
	warnMu  sync.Mutex      // Run's start and maintenance both warn
	warned  map[string]bool // tasks warnUnhandled reported; under warnMu
}

// workerSeq tells apart the registry keys of several Runs in one process.
var workerSeq atomic.Int64

// NewRegistryKey returns a registry row key for one Run: the worker ID,
// made unique per Run so that two clients of one process (same default
// WorkerID) do not overwrite each other.
func NewRegistryKey(workerID string) string {
	return workerID + "#" + strconv.FormatInt(workerSeq.Add(1), 10)
}

// WorkerInfo describes this engine for the registry at now: the fixed
// part of Config.Registry's Info, the host, and the engine's counters,
// breakers (as last read from the store) and rate limiters.
func (e *Engine) WorkerInfo(now time.Time) WorkerInfo {
	var w WorkerInfo
	if e.cfg.Registry != nil {
		w = e.cfg.Registry.Info
		w.ExpiresAt = now.Add(e.cfg.Registry.TTL)
	}
	w.Host, _ = os.Hostname()
	w.PID = os.Getpid()
	es := e.Stats()
	w.StartedAt, w.UpdatedAt = es.StartedAt, now
	w.Concurrency, w.Running = es.Concurrency, es.Running
	if w.Tasks == nil {
		w.Tasks = []string{}
	}
	breakers, _ := e.BreakerStats()
	w.Breakers = make(map[string]string, len(breakers))
	for name, st := range breakers {
		w.Breakers[name] = st.State.String()
	}
	if e.cfg.Limiter != nil || len(e.cfg.TaskLimiters) > 0 {
		w.RateLimits = make(map[string]queuemaxtype.RateLimitInfo)
	}
	if l := e.cfg.Limiter; l != nil {
		w.RateLimits["*"] = limiterInfo(l.Stats())
	}
	for name, l := range e.cfg.TaskLimiters {
		w.RateLimits[name] = limiterInfo(l.Stats())
	}
	return w
}

func limiterInfo(st ratelimit.Stats) queuemaxtype.RateLimitInfo {
	return queuemaxtype.RateLimitInfo{Limit: st.Limit, Per: st.Per.String(), Tokens: st.Tokens, Denied: st.Denied}
}

// Register writes (or refreshes) the entry.
func (r *Registry) Register(ctx context.Context) error {
	now := r.Now()
	w := r.e.WorkerInfo(now)
	info, err := json.Marshal(w)
	if err != nil {
		return err
	}
	return r.Store.WorkerPut(ctx, store.WorkerRecord{ID: r.Key, Info: info,
		StartedAt: w.StartedAt, UpdatedAt: now, ExpiresAt: w.ExpiresAt})
}

// RegisterFirst writes the first entry; Run calls it before it claims
// anything.
func (r *Registry) RegisterFirst(ctx context.Context) {
	if err := r.Register(ctx); err != nil && ctx.Err() == nil {
		r.Log.WarnContext(ctx, "worker registry: first entry failed", "err", err)
	}
}

// Name names the service.
func (r *Registry) Name() string { return "registry" }

// Interval is how often the entry is refreshed.
func (r *Registry) Interval() time.Duration { return r.Every }

// RunOnce refreshes the entry (the first round at start is
// RegisterFirst's).
func (r *Registry) RunOnce(ctx context.Context, _ time.Time) {
	if !r.started {
		r.started = true
		return
	}
	if err := r.Register(ctx); err != nil && ctx.Err() == nil {
		if !r.failing {
			r.Log.WarnContext(ctx, "worker registry: refresh failed", "err", err)
		}
		r.failing = true
	} else {
		r.failing = false
	}
}

// Close removes the entry.
func (r *Registry) Close(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.Store.WorkerDelete(dctx, r.Key); err != nil && !errors.Is(err, store.ErrClosed) {
		r.Log.WarnContext(dctx, "worker registry: remove entry", "err", err)
	}
}

// warnUnhandled logs, once per task until it recovers, every task with
// pending jobs that no live worker runs (a misspelt or renamed task, a
// service that is down), from backlog (the store's TaskBacklog, or nil to
// read it). Engine.tasks calls it at Run's start and every
// RecoveryInterval.
func (r *Registry) warnUnhandled(ctx context.Context, backlog map[string]store.TaskBacklog) {
	if len(r.Info.Tasks) == 0 {
		return // a catch-all runs every task
	}
	f, err := readFleet(ctx, r.Store, r.Now(), backlog)
	if err != nil {
		return
	}
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	now := make(map[string]bool)
	for task, ti := range f.Tasks {
		if ti.Pending == 0 || ti.Workers > 0 || slices.Contains(r.Info.Tasks, task) {
			continue // this engine runs it, even before its first registry write
		}
		now[task] = true
		if !r.warned[task] {
			r.Log.WarnContext(ctx, "task has pending jobs and no live worker runs it", "task", task, "pending", ti.Pending)
		}
	}
	r.warned = now
}

// Workers returns the live entries of st's worker registry at now,
// ordered by ID, then start.
func Workers(ctx context.Context, st store.Store, now time.Time) ([]WorkerInfo, error) {
	recs, err := st.WorkerList(ctx, now)
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

// Fleet is what the worker registry says of the processes that share a
// store: the live workers, each task's backlog with how many of them run
// it, warnings of tasks none runs, the queue's uptime, and the workers'
// breaker and rate-limiter states merged (the worst state per task; the
// limiters summed, "*" the process-wide ones).
type Fleet struct {
	Workers       []WorkerInfo
	Tasks         map[string]queuemaxtype.TaskInfo
	Warnings      []string
	UptimeSeconds float64
	Circuits      map[string]string
	CircuitState  string
	RateLimits    map[string]queuemaxtype.RateLimitInfo
}

// ReadFleet reads st's worker registry and task backlog at now.
func ReadFleet(ctx context.Context, st store.Store, now time.Time) (Fleet, error) {
	return readFleet(ctx, st, now, nil)
}

// readFleet is ReadFleet with the task backlog already read (nil: read
// it).
func readFleet(ctx context.Context, st store.Store, now time.Time, backlog map[string]store.TaskBacklog) (Fleet, error) {
	var f Fleet
	workers, err := Workers(ctx, st, now)
	if err != nil {
		return f, err
	}
	f.Workers = workers
	if backlog == nil {
		if backlog, err = st.TaskBacklog(ctx); err != nil {
			return f, err
		}
	}
	f.Tasks = make(map[string]queuemaxtype.TaskInfo, len(backlog))
	for _, task := range slices.Sorted(maps.Keys(backlog)) {
		b := backlog[task]
		ti := queuemaxtype.TaskInfo{Pending: b.Pending, Scheduled: b.Scheduled}
		for _, w := range workers {
			if w.Handles(task) {
				ti.Workers++
			}
		}
		f.Tasks[task] = ti
		if ti.Pending > 0 && ti.Workers == 0 {
			name := task
			if name == "" {
				name = `"" (no task name)`
			}
			f.Warnings = append(f.Warnings, fmt.Sprintf("task %s has %d pending jobs and no live worker runs it", name, ti.Pending))
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
		if at, err := st.CreatedAt(ctx); err == nil {
			since = at
		}
	}
	if !since.IsZero() {
		f.UptimeSeconds = max(0, now.Sub(since).Seconds())
	}
	rank := map[string]int{breaker.Closed.String(): 0, breaker.HalfOpen.String(): 1, breaker.Open.String(): 2}
	f.CircuitState = breaker.Closed.String()
	f.Circuits = make(map[string]string)
	for _, w := range workers {
		for task, st := range w.Breakers {
			if cur, ok := f.Circuits[task]; !ok || rank[st] > rank[cur] {
				f.Circuits[task] = st
			}
			if rank[st] > rank[f.CircuitState] {
				f.CircuitState = st
			}
		}
		for task, rl := range w.RateLimits {
			if f.RateLimits == nil {
				f.RateLimits = make(map[string]queuemaxtype.RateLimitInfo)
			}
			sum := f.RateLimits[task]
			sum.Limit += rl.Limit
			sum.Per = rl.Per
			sum.Tokens += rl.Tokens
			sum.Denied += rl.Denied
			f.RateLimits[task] = sum
		}
	}
	return f, nil
}
