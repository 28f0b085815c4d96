package queuemax

import (
	"context"
	"fmt"

	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// EnqueueTx stores one job of task with payload inside tx, the
// application's open transaction, and returns its ID: the job exists if
// and only if tx commits, together with the application's own writes in
// tx. Validation and defaults are those of Enqueue; an invalid job is
// rejected before anything is written to tx.
//
// No worker can see the job before tx commits. Workers on every host (this
// process included) are woken by the NOTIFY the store sends inside tx,
// which PostgreSQL delivers at commit, and by polling if a notification is
// lost. EnqueueTx does not wake this process's workers itself and emits no
// EventEnqueued, because the client cannot observe the commit or rollback.
//
// On the embedded SQLite store EnqueueTx returns ErrTxUnsupported: a job
// lives in a shard file of queuemax's own, which an application
// transaction cannot span. It returns ErrClosed after Close, and an error
// naming the type for a tx that is nil or not a transaction of the store's
// driver. An error from the database may leave tx aborted (PostgreSQL
// rejects further statements until rollback), as any failed statement does.
func (c *Client) EnqueueTx(ctx context.Context, tx Tx, task string, payload any, o Opts) (JobID, error) {
	ids, err := c.enqueueTx(ctx, tx, []EnqueueParams{{Task: task, Payload: payload, Opts: o}}, false)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueManyTx stores jobs inside tx, as EnqueueMany does outside one, and
// returns their IDs in order: they exist if and only if tx commits. Every
// job is validated first; if any is invalid, nothing is written to tx and
// the error names its index. See EnqueueTx for wake-up, errors and SQLite.
func (c *Client) EnqueueManyTx(ctx context.Context, tx Tx, jobs []EnqueueParams) ([]JobID, error) {
	return c.enqueueTx(ctx, tx, jobs, true)
}

func (c *Client) enqueueTx(ctx context.Context, tx Tx, jobs []EnqueueParams, many bool) ([]JobID, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if !c.st.Features().Tx {
		return nil, ErrTxUnsupported
	}
	if enqueue.IsNil(tx) {
		return nil, fmt.Errorf("%w: the transaction is nil (%T)", ErrInvalidTx, tx)
	}
	var ps []store.InsertParams
	if many {
		var err error
		if ps, err = c.prepareMany(jobs); err != nil {
			return nil, err
		}
	} else {
		p, err := c.prepare(jobs[0])
		if err != nil {
			return nil, err
		}
		ps = []store.InsertParams{p}
	}
	if len(ps) == 0 {
		return nil, nil
	}
	c.res.Place(ps)
	ids, err := c.st.InsertTx(ctx, tx, ps)
	if err != nil {
		return nil, err
	}
	if len(ids) != len(ps) {
		return nil, fmt.Errorf("queuemax: store returned %d ids for %d jobs", len(ids), len(ps))
	}
	return ids, nil
}
