package queuemax

import (
	"context"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// ErrInvalidUnique is returned for unique options that cannot work: by
// arguments and by key at once, unique_states without a uniqueness, a
// status set missing pending, scheduled or processing, a negative period,
// or a job unique by key enqueued without Opts.UniqueKey.
var ErrInvalidUnique = enqueue.ErrInvalidUnique

// UniqueOpts makes a task's jobs unique (by arguments, by a key of the
// caller's, by period window), as River's UniqueOpts do; see
// queuemaxtype.UniqueOpts for its fields.
type UniqueOpts = queuemaxtype.UniqueOpts

// EnqueueResult is what one enqueue did.
type EnqueueResult struct {
	// ID is the job's ID: the new job's, or for a duplicate the stored
	// job's that holds the unique key.
	ID JobID
	// Duplicate is true when nothing was inserted because the job is
	// unique and a stored job with its key is in a counted status (River's
	// UniqueSkippedAsDuplicate).
	Duplicate bool
}

// EnqueueManyResults is EnqueueMany reporting, per job, its ID and whether
// it was a duplicate of a stored unique job. Duplicates are not errors: the
// other jobs are stored, all or nothing as with EnqueueMany, and a
// duplicate inside the batch (two jobs with one key) stores the first and
// reports the second as its duplicate.
func (c *Client) EnqueueManyResults(ctx context.Context, jobs []EnqueueParams) ([]EnqueueResult, error) {
	ps, err := c.prepareMany(jobs)
	if err != nil {
		return nil, err
	}
	ids, err := c.insertPrepared(ctx, ps)
	if err != nil {
		return nil, err
	}
	return results(ps, ids), nil
}

// results pairs stored IDs with the duplicate flags the store set.
func results(ps []store.InsertParams, ids []JobID) []EnqueueResult {
	out := make([]EnqueueResult, len(ids))
	for i, id := range ids {
		out[i] = EnqueueResult{ID: id, Duplicate: isDuplicate(&ps[i])}
	}
	return out
}

func isDuplicate(p *store.InsertParams) bool { return p.Unique != nil && p.Unique.Duplicate }

// EnqueueResult is Enqueue reporting whether the job was a duplicate of a
// stored unique job: then nothing was inserted and the result's ID is that
// job's. (Enqueue returns the same ID with a nil error.)
func (c *Client) EnqueueResult(ctx context.Context, task string, payload any, o Opts) (EnqueueResult, error) {
	return c.enqueueResult(ctx, EnqueueParams{Task: task, Payload: payload, Opts: o})
}

// EnqueueResult is Enqueue reporting whether the job was a duplicate of a
// stored unique job: then nothing was inserted and the result's ID is that
// job's. (Enqueue returns the same ID with a nil error.)
func (t Task[A]) EnqueueResult(ctx context.Context, args A) (EnqueueResult, error) {
	if t.c == nil {
		return EnqueueResult{}, ErrNotBound
	}
	return t.c.enqueueResult(ctx, t.params(args))
}

// EnqueueManyResults is EnqueueMany reporting duplicates per job; see
// Client.EnqueueManyResults.
func (t Task[A]) EnqueueManyResults(ctx context.Context, args []A) ([]EnqueueResult, error) {
	if t.c == nil {
		return nil, ErrNotBound
	}
	params := make([]EnqueueParams, len(args))
	for i, a := range args {
		params[i] = t.params(a)
	}
	return t.c.EnqueueManyResults(ctx, params)
}
