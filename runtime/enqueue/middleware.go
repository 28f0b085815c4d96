package enqueue

import (
	"context"
	"fmt"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// InsertFunc stores jobs whose shards are chosen and returns their IDs in
// order.
type InsertFunc func(ctx context.Context, ps []store.InsertParams) ([]queuemaxtype.JobID, error)

// Insert runs the enqueue middleware mws around insert, which stores ps.
// The middleware see each job as an InsertJob; the changes they make are
// checked with Apply and written back into ps (in place, so the caller's
// events see them); then place chooses the jobs' shards, and insert runs.
// Without middleware it only places and inserts.
func Insert(ctx context.Context, mws []queuemaxtype.EnqueueMiddleware, ps []store.InsertParams,
	place func([]store.InsertParams), insert InsertFunc) ([]queuemaxtype.JobID, error) {
	if len(mws) == 0 {
		place(ps)
		return insert(ctx, ps)
	}
	jobs := make([]*queuemaxtype.InsertJob, len(ps))
	for i, p := range ps {
		jobs[i] = &queuemaxtype.InsertJob{Task: p.Task, Payload: p.Payload, Priority: p.Priority, MaxAttempts: p.MaxAttempts,
			RunAt: p.RunAt, Key: p.PartitionKey, Metadata: p.Metadata}
	}
	inner := func(ctx context.Context) ([]queuemaxtype.JobID, error) {
		for i, j := range jobs {
			if err := Apply(&ps[i], j); err != nil {
				if len(ps) == 1 {
					return nil, err
				}
				return nil, fmt.Errorf("job %d: %w", i, err)
			}
		}
		place(ps)
		return insert(ctx, ps)
	}
	var run func(i int, ctx context.Context) ([]queuemaxtype.JobID, error)
	run = func(i int, ctx context.Context) ([]queuemaxtype.JobID, error) {
		if i == len(mws) {
			return inner(ctx)
		}
		return mws[i].InsertMany(ctx, jobs, func(ctx context.Context) ([]queuemaxtype.JobID, error) { return run(i+1, ctx) })
	}
	return run(0, ctx)
}

// Apply checks j, an InsertJob as enqueue middleware left it, with the
// checks Resolve made, and copies it into p (Place then chooses its shard
// from its key).
func Apply(p *store.InsertParams, j *queuemaxtype.InsertJob) error {
	if err := CheckPayload(j.Payload); err != nil {
		return err
	}
	if j.Metadata != nil {
		if err := CheckMetadata(j.Metadata); err != nil {
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
