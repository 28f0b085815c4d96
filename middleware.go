package queuemax

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/queuemax/queuemax/runtime/shard"
	"github.com/queuemax/queuemax/runtime/store"
)

// JobMiddleware is one entry of Config.Middleware: a value that implements
// EnqueueMiddleware, WorkMiddleware, or both (as a tracing middleware
// does, which writes trace context on enqueue and reads it on execution).
// Open fails with a *ConfigError for an entry that implements neither.
//
// Middleware run in list order: the first entry is the outermost, so it
// sees a job first and its outcome last. River's JobInsertMiddleware and
// WorkerMiddleware are the model. (The net/http Middleware function is
// unrelated: it puts a Client into request contexts.)
type JobMiddleware any

// EnqueueMiddleware wraps every insert of new jobs: Enqueue, EnqueueMany,
// EnqueueFile, task handles, and the jobs the periodic scheduler enqueues.
// Re-queueing an existing job (RetryJob, RetryFailed, RequeueDead) is not
// an insert and does not pass through it.
type EnqueueMiddleware interface {
	// InsertMany is called with the validated jobs about to be inserted.
	// It may modify them (their Metadata in particular) and must call next
	// to insert them, or return an error to insert none. next returns the
	// jobs' IDs in order once they are committed. For a periodic slot that
	// another scheduler fired first, next returns no IDs and no error.
	InsertMany(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]JobID, error)) ([]JobID, error)
}

// WorkMiddleware wraps each execution of a job's handler by Run (one claim
// of the job; in-process retries from TaskOptions.RetryOn happen inside
// next). It runs on the job's goroutine with the job's context.
type WorkMiddleware interface {
	// Work must call next to run the handler and return its result and
	// error, which it may change (an error it returns is recorded as the
	// job's failure). job must not be modified. A panic in Work is
	// recovered and fails the attempt, as a handler's panic does.
	Work(ctx context.Context, job *Job, next func(ctx context.Context) (any, error)) (any, error)
}

// EnqueueMiddlewareFunc adapts a function to an EnqueueMiddleware.
type EnqueueMiddlewareFunc func(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]JobID, error)) ([]JobID, error)

// InsertMany calls f.
func (f EnqueueMiddlewareFunc) InsertMany(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]JobID, error)) ([]JobID, error) {
	return f(ctx, jobs, next)
}

// WorkMiddlewareFunc adapts a function to a WorkMiddleware.
type WorkMiddlewareFunc func(ctx context.Context, job *Job, next func(ctx context.Context) (any, error)) (any, error)

// Work calls f.
func (f WorkMiddlewareFunc) Work(ctx context.Context, job *Job, next func(ctx context.Context) (any, error)) (any, error) {
	return f(ctx, job, next)
}

// InsertJob is one job on its way into the store, as EnqueueMiddleware
// sees it: the task's defaults and the enqueue's Opts already resolved.
// Changes a middleware makes are validated again before the insert, with
// the same errors as Enqueue's.
type InsertJob struct {
	Task        string
	Payload     json.RawMessage // a JSON object
	Priority    Priority
	MaxAttempts int       // retries + 1
	RunAt       time.Time // zero: ready at once
	Key         *int64    // the partition key; nil: a random shard
	// Metadata is a JSON object stored with the job and returned as
	// Job.Metadata (to a WorkMiddleware, for example); nil stores none.
	Metadata json.RawMessage
}

// SetMetadata sets key to value (JSON-encoded) in j.Metadata, creating
// the object if needed and keeping its other keys.
func (j *InsertJob) SetMetadata(key string, value any) error {
	m := map[string]json.RawMessage{}
	if len(j.Metadata) > 0 {
		if err := json.Unmarshal(j.Metadata, &m); err != nil {
			return fmt.Errorf("queuemax: job metadata is not a JSON object: %w", err)
		}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("queuemax: metadata %q: %w", key, err)
	}
	m[key] = v
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	j.Metadata = b
	return nil
}

// checkMiddleware is Config.validate's check of Config.Middleware.
func checkMiddleware(mws []JobMiddleware) error {
	for i, m := range mws {
		_, enq := m.(EnqueueMiddleware)
		_, work := m.(WorkMiddleware)
		if !enq && !work {
			return &ConfigError{"Middleware", fmt.Sprintf("entry %d (%T) implements neither EnqueueMiddleware nor WorkMiddleware", i, m)}
		}
	}
	return nil
}

// insertVia runs the enqueue middleware around insert, which stores ps.
// Changes the middleware makes are validated and written back into ps
// (in place, so the caller's events see them) before insert runs.
func (c *Client) insertVia(ctx context.Context, ps []store.InsertParams,
	insert func(ctx context.Context, ps []store.InsertParams) ([]JobID, error)) ([]JobID, error) {
	var mws []EnqueueMiddleware
	for _, m := range c.cfg.Middleware {
		if em, ok := m.(EnqueueMiddleware); ok {
			mws = append(mws, em)
		}
	}
	if len(mws) == 0 {
		return insert(ctx, ps)
	}
	jobs := make([]*InsertJob, len(ps))
	for i, p := range ps {
		jobs[i] = &InsertJob{Task: p.Task, Payload: p.Payload, Priority: p.Priority, MaxAttempts: p.MaxAttempts,
			RunAt: p.RunAt, Key: p.PartitionKey, Metadata: p.Metadata}
	}
	inner := func(ctx context.Context) ([]JobID, error) {
		for i, j := range jobs {
			if err := c.applyInsertJob(&ps[i], j); err != nil {
				if len(ps) == 1 {
					return nil, err
				}
				return nil, fmt.Errorf("job %d: %w", i, err)
			}
		}
		return insert(ctx, ps)
	}
	var run func(i int, ctx context.Context) ([]JobID, error)
	run = func(i int, ctx context.Context) ([]JobID, error) {
		if i == len(mws) {
			return inner(ctx)
		}
		return mws[i].InsertMany(ctx, jobs, func(ctx context.Context) ([]JobID, error) { return run(i+1, ctx) })
	}
	return run(0, ctx)
}

// applyInsertJob validates j, as changed by middleware, and copies it into
// p, moving the job to its key's shard if the key changed.
func (c *Client) applyInsertJob(p *store.InsertParams, j *InsertJob) error {
	if err := checkPayload(j.Payload); err != nil {
		return err
	}
	if j.Metadata != nil {
		if err := checkMetadata(j.Metadata); err != nil {
			return err
		}
	}
	if !j.Priority.Valid() {
		return fmt.Errorf("%w: got %d", ErrInvalidPriority, j.Priority)
	}
	if j.MaxAttempts < 1 {
		return fmt.Errorf("%w: max attempts %d (want at least 1)", ErrInvalidRetries, j.MaxAttempts)
	}
	if p.Unique != nil && !sameKey(j.Key, p.PartitionKey) {
		// The unique key (and so the shard) includes the partition key.
		return fmt.Errorf("%w: enqueue middleware changed the partition key of a unique job", ErrInvalidUnique)
	}
	switch {
	case j.Key != nil && (p.PartitionKey == nil || *p.PartitionKey != *j.Key):
		p.Shard = shard.ForKey(*j.Key, c.cfg.Shards)
	case j.Key == nil && p.PartitionKey != nil:
		p.Shard = rand.IntN(c.cfg.Shards)
	}
	p.Task, p.Payload, p.Priority, p.MaxAttempts, p.RunAt, p.PartitionKey, p.Metadata =
		j.Task, j.Payload, j.Priority, j.MaxAttempts, j.RunAt, j.Key, j.Metadata
	return nil
}

// sameKey reports whether two partition keys are equal (both nil, or the
// same value).
func sameKey(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// checkMetadata checks that raw is a JSON object of at most
// MaxPayloadBytes.
func checkMetadata(raw json.RawMessage) error {
	trimmed := bytes.TrimSpace(raw)
	switch {
	case len(raw) > MaxPayloadBytes:
		return fmt.Errorf("%w: metadata of %d bytes exceeds the %d-byte limit", ErrInvalidPayload, len(raw), MaxPayloadBytes)
	case len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed):
		return fmt.Errorf("%w: metadata must be a JSON object", ErrInvalidPayload)
	}
	return nil
}

// work runs the work middleware around c.call. A panic in a middleware
// fails the attempt like a handler's panic.
func (c *Client) work(ctx context.Context, h *Handler, j *Job) (any, error) {
	var mws []WorkMiddleware
	for _, m := range c.cfg.Middleware {
		if wm, ok := m.(WorkMiddleware); ok {
			mws = append(mws, wm)
		}
	}
	if len(mws) == 0 {
		return c.call(ctx, h, j)
	}
	var run func(i int, ctx context.Context) (any, error)
	run = func(i int, ctx context.Context) (result any, err error) {
		if i == len(mws) {
			return c.call(ctx, h, j)
		}
		defer func() {
			if r := recover(); r != nil {
				result, err = nil, panicError(r)
			}
		}()
		return mws[i].Work(ctx, j, func(ctx context.Context) (any, error) { return run(i+1, ctx) })
	}
	return run(0, ctx)
}
