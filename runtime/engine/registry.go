package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Registry is the service that keeps one Run's entry in the store's
// worker registry: it writes the first entry before the engine claims
// anything (so a process that runs jobs is listed), refreshes it every
// Every, and removes it when the engine stops. Failures are logged, never
// fatal: a registry that cannot be written makes the process look absent,
// never stops it from running jobs.
type Registry struct {
	Store store.Store
	Key   string        // the registry row, unique per Run
	Every time.Duration // refresh interval
	TTL   time.Duration // how long an entry lives without a refresh
	Now   func() time.Time
	Log   *slog.Logger
	// Describe returns the entry's JSON (the API's WorkerInfo) at now,
	// for an entry that expires at expires, and when this Run started.
	Describe func(now, expires time.Time) (info json.RawMessage, startedAt time.Time, err error)

	started bool // RunOnce's first round (at start, RegisterFirst's) has passed; RunOnce's goroutine only
	failing bool
}

// Register writes (or refreshes) the entry.
func (r *Registry) Register(ctx context.Context) error {
	now := r.Now()
	expires := now.Add(r.TTL)
	info, started, err := r.Describe(now, expires)
	if err != nil {
		return err
	}
	return r.Store.WorkerPut(ctx, store.WorkerRecord{ID: r.Key, Info: info,
		StartedAt: started, UpdatedAt: now, ExpiresAt: expires})
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
