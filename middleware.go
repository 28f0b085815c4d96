package queuemax

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// The middleware types are defined, with their full documentation, in
// package queuemaxtype, which the engine shares.
type (
	// JobMiddleware is one entry of Config.Middleware: a value that
	// implements EnqueueMiddleware, WorkMiddleware, or both; see
	// queuemaxtype.JobMiddleware. (The net/http Middleware function is
	// unrelated: it puts a Client into request contexts.)
	JobMiddleware = queuemaxtype.JobMiddleware
	// EnqueueMiddleware wraps every insert of new jobs; see
	// queuemaxtype.EnqueueMiddleware.
	EnqueueMiddleware = queuemaxtype.EnqueueMiddleware
	// WorkMiddleware wraps each execution of a job's handler; see
	// queuemaxtype.WorkMiddleware.
	WorkMiddleware = queuemaxtype.WorkMiddleware
	// EnqueueMiddlewareFunc adapts a function to an EnqueueMiddleware; see
	// queuemaxtype.EnqueueMiddlewareFunc.
	EnqueueMiddlewareFunc = queuemaxtype.EnqueueMiddlewareFunc
	// WorkMiddlewareFunc adapts a function to a WorkMiddleware; see
	// queuemaxtype.WorkMiddlewareFunc.
	WorkMiddlewareFunc = queuemaxtype.WorkMiddlewareFunc
	// InsertJob is one job on its way into the store, as EnqueueMiddleware
	// sees it; see queuemaxtype.InsertJob for its fields and SetMetadata.
	InsertJob = queuemaxtype.InsertJob
)

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
// (in place, so the caller's events see them); then place chooses the
// jobs' shards, and insert runs.
func (c *Client) insertVia(ctx context.Context, ps []store.InsertParams, place func([]store.InsertParams),
	insert func(ctx context.Context, ps []store.InsertParams) ([]JobID, error)) ([]JobID, error) {
	var mws []EnqueueMiddleware
	for _, m := range c.cfg.Middleware {
		if em, ok := m.(EnqueueMiddleware); ok {
			mws = append(mws, em)
		}
	}
	if len(mws) == 0 {
		place(ps)
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
		place(ps)
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
// p (place then chooses its shard from its key).
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
