package queuemax

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/internal/codec"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// Enqueue stores one job of task with payload (a struct, map or
// json.RawMessage that encodes to a JSON object) and returns its ID. The job
// is durable once Enqueue returns nil. Task defaults come from the handler
// registered under task, if any. Concurrent enqueues to one shard share a
// transaction.
//
// task must name one of the client's handlers or, for a task it has no
// handler of, a task of the store's task catalogue (written by every Run,
// kept after the workers stop; see TaskCatalog), by its full name, an
// alias or a short name such as SendEmail that matches one task. Other
// names are ErrUnknownTask listing the near matches, unless
// Opts.AllowUnknownTask or Config.AllowUnknownTasks is set. The payload of a registered task is checked against its parameters
// (see DecodeArgs), and that of a task registered only in other processes
// against the payload schema their live workers publish (see
// WorkerInfo.Schemas): a *PayloadShapeError names the bad field. It returns
// ErrInvalidPayload, ErrInvalidPriority or ErrInvalidRetries for other bad
// input, and ErrClosed after Close.
func (c *Client) Enqueue(ctx context.Context, task string, payload any, o Opts) (JobID, error) {
	return c.enqueueOne(ctx, EnqueueParams{Task: task, Payload: payload, Opts: o})
}

func (c *Client) enqueueOne(ctx context.Context, e EnqueueParams) (JobID, error) {
	r, err := c.enqueueResult(ctx, e)
	return r.ID, err
}

// enqueueResult stores one job and says whether it was a duplicate.
func (c *Client) enqueueResult(ctx context.Context, e EnqueueParams) (EnqueueResult, error) {
	p, err := c.prepare(e)
	if err != nil {
		return EnqueueResult{}, err
	}
	ps := []store.InsertParams{p}
	ids, err := c.insertVia(ctx, ps, c.res.Place, c.st.Insert)
	if err != nil {
		return EnqueueResult{}, err
	}
	c.afterInsert(ctx, ps, ids)
	return EnqueueResult{ID: ids[0], Duplicate: isDuplicate(&ps[0])}, nil
}

// prepareMany prepares every job of a batch; an invalid one is an error
// naming its index (ErrClosed as it is).
func (c *Client) prepareMany(jobs []EnqueueParams) ([]store.InsertParams, error) {
	ps := make([]store.InsertParams, len(jobs))
	for i, e := range jobs {
		p, err := c.prepare(e)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		ps[i] = p
	}
	return ps, nil
}

// prepare validates one job and resolves its defaults: every enqueue
// path's one resolution of a job's options (place then chooses its shard).
func (c *Client) prepare(e EnqueueParams) (store.InsertParams, error) {
	if c.closed.Load() {
		return store.InsertParams{}, ErrClosed
	}
	typed := e.defaults != nil
	task := e.Task
	if _, known := c.handlers[task]; !typed && !known {
		// Only a name to resolve may read the catalogue: the timer is
		// not worth its cost on the path of a known task.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		task, err = c.taskNames.Resolve(rctx, e.Task, typed, e.Opts.AllowUnknownTask)
		cancel()
		if err != nil {
			return store.InsertParams{}, err
		}
	}
	e.Task = task
	raw, err := enqueue.EncodePayload(e.Payload)
	if err != nil {
		return store.InsertParams{}, err
	}
	// One check, the decode the worker runs: the registered handler's,
	// else the typed handle's, else the shape a live worker published.
	// A payload encoded here from a value of the decode's own type, one
	// whose every encoding that decode accepts (codec.EncodedFrom), is
	// not decoded again.
	if h, ok := c.handlers[task]; ok && h.Validate != nil {
		if err := codec.CheckUnless(codec.SameFunc(h.Validate, h.check) && codec.EncodedFrom(e.Payload, h.args), h.Validate, raw); err != nil {
			return store.InsertParams{}, err
		}
	} else if e.validate != nil {
		if err := codec.CheckUnless(codec.EncodedFrom(e.Payload, e.args), e.validate, raw); err != nil {
			return store.InsertParams{}, err
		}
	} else if !ok {
		if err := c.schemas.Check(task, raw); err != nil {
			return store.InsertParams{}, err
		}
	}
	def := e.defaults
	if def == nil {
		if h, ok := c.handlers[e.Task]; ok {
			def = &h.Options
		} else {
			def = &TaskOptions{}
		}
	}
	d, o := def.defaults(), e.Opts.resolved()
	return c.res.Resolve(task, raw, &d, &o) // its shard is chosen by Place, after the enqueue middleware
}

func (c *Client) afterInsert(ctx context.Context, ps []store.InsertParams, ids []JobID) {
	c.events.Enqueued(ctx, ps, ids) // before the wake-up: a job's enqueue event precedes its completion
	c.notify()
	c.checkAlert(ctx, false)
}

// EnqueueMany stores jobs all or nothing and returns their IDs in order.
// Every job is validated first: if any is invalid nothing is stored and the
// error names its index. The jobs without a key of one call go to one
// shard (runs of max(1,000, n/Shards) on consecutive shards for a larger
// call; see enqueue.Place), so that a batch is one transaction. The shards
// are written in parallel; a batch that spans shards is staged in each, committed by one record in shard 0 and
// then published, so no job of it can be claimed before all are stored,
// and after an error (a locked shard, a full disk) none ran or stays. Jobs
// a killed producer left staged are removed by the next Open or orphan
// recovery.
func (c *Client) EnqueueMany(ctx context.Context, jobs []EnqueueParams) ([]JobID, error) {
	ps, err := c.prepareMany(jobs)
	if err != nil {
		return nil, err
	}
	return c.insertPrepared(ctx, ps)
}

// insertPrepared stores jobs that prepare has validated.
func (c *Client) insertPrepared(ctx context.Context, ps []store.InsertParams) ([]JobID, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	ids, err := c.insertVia(ctx, ps, c.res.Place, c.st.Insert)
	if err != nil {
		return nil, err
	}
	c.afterInsert(ctx, ps, ids)
	return ids, nil
}

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

// results pairs stored IDs with the duplicate flags the store set.
func results(ps []store.InsertParams, ids []JobID) []EnqueueResult {
	out := make([]EnqueueResult, len(ids))
	for i, id := range ids {
		out[i] = EnqueueResult{ID: id, Duplicate: isDuplicate(&ps[i])}
	}
	return out
}

func isDuplicate(p *store.InsertParams) bool { return p.Unique != nil && p.Unique.Duplicate }

// insertVia runs the enqueue middleware around insert, which stores ps
// (see enqueue.Insert); place chooses the jobs' shards after them.
func (c *Client) insertVia(ctx context.Context, ps []store.InsertParams, place func([]store.InsertParams),
	insert func(ctx context.Context, ps []store.InsertParams) ([]JobID, error)) ([]JobID, error) {
	var mws []EnqueueMiddleware
	for _, m := range c.cfg.Middleware {
		if em, ok := m.(EnqueueMiddleware); ok {
			mws = append(mws, em)
		}
	}
	return enqueue.Insert(ctx, mws, ps, place, insert)
}

// ErrInvalidUnique is returned for unique options that cannot work: by
// arguments and by key at once, unique_states without a uniqueness, a
// status set missing pending, scheduled or processing, a negative period,
// or a job unique by key enqueued without Opts.UniqueKey.
var ErrInvalidUnique = enqueue.ErrInvalidUnique

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
