package queuemax

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

func (c *Client) workflowStore() (store.WorkflowStore, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return c.st, nil
}

// EnqueueWorkflow validates wf (see Workflow.Validate) and each step's job
// (as Enqueue does), then stores every step at once, in one transaction:
// the steps without dependencies are claimable at once, the others wait
// until every step they come After has completed. Every step of a
// workflow is stored on one shard, so that the transaction that records a
// step's end also releases the steps waiting for it. A step's job cannot
// be unique (Opts.Unique, or a task with unique defaults). It returns the
// workflow's ID, for Workflow and CancelWorkflow.
func (c *Client) EnqueueWorkflow(ctx context.Context, wf *Workflow) (WorkflowID, error) {
	ws, err := c.workflowStore()
	if err != nil {
		return 0, err
	}
	p, err := c.prepareWorkflow(wf)
	if err != nil {
		return 0, err
	}
	id, ids, err := ws.InsertWorkflow(ctx, p)
	if err != nil {
		return 0, err
	}
	c.afterWorkflow(ctx, p, ids)
	return WorkflowID(id), nil
}

// EnqueueWorkflowTx is EnqueueWorkflow inside a transaction the
// application owns (PostgreSQL, as EnqueueTx): the workflow exists if
// and only if tx commits. Stores without transactions return
// ErrTxUnsupported.
func (c *Client) EnqueueWorkflowTx(ctx context.Context, tx Tx, wf *Workflow) (WorkflowID, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if !c.st.Features().Tx {
		return 0, ErrTxUnsupported
	}
	if enqueue.IsNil(tx) {
		return 0, fmt.Errorf("%w: the transaction is nil (%T)", ErrInvalidTx, tx)
	}
	p, err := c.prepareWorkflow(wf)
	if err != nil {
		return 0, err
	}
	id, _, err := c.st.InsertWorkflowTx(ctx, tx, p)
	if err != nil {
		return 0, err
	}
	return WorkflowID(id), nil
}

// prepareWorkflow validates wf and resolves each step's job.
func (c *Client) prepareWorkflow(wf *Workflow) (*store.WorkflowParams, error) {
	if wf == nil {
		return nil, fmt.Errorf("%w: nil workflow", ErrInvalidWorkflow)
	}
	if err := wf.Validate(); err != nil {
		return nil, err
	}
	p := &store.WorkflowParams{Name: wf.name, Shard: rand.IntN(c.cfg.Shards), Now: c.now(),
		Steps: make([]store.WorkflowStepParams, len(wf.steps))}
	for i, s := range wf.steps {
		j, err := c.prepare(s.enqueueParams()) // a typed step (AddStep) brings its handle's defaults and check
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, fmt.Errorf("workflow %q: step %q: %w", wf.name, s.name, err)
		}
		j.Shard = p.Shard
		st := store.WorkflowStepParams{Name: s.name, Job: j, After: s.after, Settled: s.settled}
		for _, b := range s.binds {
			st.Binds = append(st.Binds, store.WorkflowBind{Param: b.Param, From: b.From})
		}
		if err := enqueue.CheckStep(wf.name, &st); err != nil {
			return nil, err
		}
		p.Steps[i] = st
	}
	return p, nil
}

// afterWorkflow emits the steps' enqueue events and wakes the workers.
func (c *Client) afterWorkflow(ctx context.Context, p *store.WorkflowParams, ids []JobID) {
	ps := make([]store.InsertParams, len(p.Steps))
	for i := range p.Steps {
		ps[i] = p.Steps[i].Job
	}
	c.afterInsert(ctx, ps, ids)
}

// Workflow returns a stored workflow with its steps in the order they
// were added, or an error wrapping ErrWorkflowNotFound.
func (c *Client) Workflow(ctx context.Context, id WorkflowID) (*WorkflowInfo, error) {
	ws, err := c.workflowStore()
	if err != nil {
		return nil, err
	}
	r, err := ws.Workflow(ctx, int64(id))
	if errors.Is(err, store.ErrWorkflowNotFound) {
		return nil, fmt.Errorf("%w: %d", ErrWorkflowNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	return engine.WorkflowInfo(r), nil
}

// Workflows lists stored workflows, newest first, without their steps
// (Workflow returns those).
func (c *Client) Workflows(ctx context.Context, p WorkflowListParams) ([]*WorkflowInfo, error) {
	ws, err := c.workflowStore()
	if err != nil {
		return nil, err
	}
	switch p.Status {
	case "", WorkflowRunning, WorkflowCompleted, WorkflowFailed, WorkflowCancelled:
	default:
		return nil, fmt.Errorf("queuemax: invalid workflow status %q (valid: running, completed, failed, cancelled)", p.Status)
	}
	if p.Limit < 0 {
		return nil, fmt.Errorf("queuemax: invalid workflow list limit %d", p.Limit)
	}
	rs, err := ws.Workflows(ctx, store.WorkflowFilter{Status: string(p.Status), Name: p.Name, Limit: p.Limit, Before: int64(p.Before)})
	if errors.Is(err, store.ErrWorkflowNotFound) {
		return nil, fmt.Errorf("%w: %d (WorkflowListParams.Before)", ErrWorkflowNotFound, p.Before)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*WorkflowInfo, len(rs))
	for i, r := range rs {
		out[i] = engine.WorkflowInfo(r)
	}
	return out, nil
}

// CancelWorkflow cancels every step of a workflow that has not finished:
// waiting and ready steps at once, running ones through their context (as
// Cancel does: the handler's context is cancelled with cause
// ErrJobCancelled and the step ends cancelled unless it succeeds first).
// The workflow ends cancelled once its running steps have ended. A
// finished workflow is left as it is (not an error); an unknown ID is an
// error wrapping ErrWorkflowNotFound.
func (c *Client) CancelWorkflow(ctx context.Context, id WorkflowID) error {
	ws, err := c.workflowStore()
	if err != nil {
		return err
	}
	finished, err := ws.CancelWorkflow(ctx, int64(id), c.now())
	if err != nil {
		if errors.Is(err, store.ErrWorkflowNotFound) {
			return fmt.Errorf("%w: %d", ErrWorkflowNotFound, id)
		}
		return err
	}
	var e *engine.Engine
	if w := c.engine.Load(); w != nil {
		e = w.Engine
	}
	engine.AfterWorkflowCancel(ctx, ws, c.events, e, int64(id), finished, c.log)
	return nil
}

// ErrNotWorkflowStep is returned by StepResult outside a workflow step's
// handler.
var ErrNotWorkflowStep = errors.New("queuemax: not running a workflow step")

// ErrNoStepResult is returned by StepResult for a step that has not
// completed, or completed without a result.
var ErrNoStepResult = errors.New("queuemax: step has no result")

// StepResult decodes the stored result of step, a step of the workflow
// whose step is running, into v, strictly (as DecodePayload: unknown
// fields and mismatched types are errors). It is meant for a step's
// handler, to read what the steps it comes After returned. Errors: ctx is
// not a workflow step's (ErrNotWorkflowStep), the workflow has no step of
// that name (ErrInvalidWorkflow), or the step has not completed or
// returned no result (ErrNoStepResult).
func StepResult(ctx context.Context, step string, v any) error {
	raw, err := engine.StoredStepResult(ctx, step, ErrNotWorkflowStep, ErrNoStepResult)
	if err != nil {
		return err
	}
	if err := DecodePayload("step "+step+" result", raw, v); err != nil {
		return fmt.Errorf("queuemax: StepResult(%q): %w", step, err)
	}
	return nil
}

func (c *Client) fillWorkflowCounts(ctx context.Context, s *Stats) error {
	n, err := engine.WorkflowCounts(ctx, c.st)
	s.Workflows = n
	return err
}
