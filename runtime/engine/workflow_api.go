package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// The logic of the root package's StepResult, Client.CancelWorkflow,
// Workflow, Workflows and the workflow counts of Stats, which forward here.

// StoredStepResult returns the stored result of step, a step of the
// workflow whose step runs with ctx (see queuemax.StepResult). The errors
// wrap notStep (the root's ErrNotWorkflowStep), enqueue.ErrInvalidWorkflow
// or noResult (ErrNoStepResult).
func StoredStepResult(ctx context.Context, step string, notStep, noResult error) (json.RawMessage, error) {
	s, ok := StepFromContext(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: StepResult(%q) needs the context of a workflow step's handler", notStep, step)
	}
	out, err := s.Store.StepResult(ctx, s.Job.ID, step)
	if err != nil {
		return nil, err
	}
	switch {
	case !out.InWorkflow:
		return nil, fmt.Errorf("%w: job %d", notStep, s.Job.ID)
	case !out.Known:
		return nil, fmt.Errorf("%w: workflow %d has no step %q", enqueue.ErrInvalidWorkflow, s.Job.Workflow, step)
	case out.State != string(store.StatusCompleted):
		return nil, fmt.Errorf("%w: step %q is %s, not completed", noResult, step, stepState(out.State))
	case out.Result == nil:
		return nil, fmt.Errorf("%w: step %q completed without a result", noResult, step)
	}
	return out.Result, nil
}

func stepState(s string) string {
	if s == store.StepReady {
		return "not finished"
	}
	return s
}

// AfterWorkflowCancel follows the cancel of workflow id: e (nil when no
// Run is active) cancels this process's running steps now rather than at
// their next heartbeat, and a workflow the cancel finished gets its end
// event.
func AfterWorkflowCancel(ctx context.Context, ws store.WorkflowStore, ev *Events, e *Engine, id int64, finished bool, log *slog.Logger) {
	if e != nil {
		if r, err := ws.Workflow(ctx, id); err == nil {
			for _, s := range r.Steps {
				if s.Job == store.StatusProcessing {
					e.CancelLocal(s.JobID)
				}
			}
		}
	}
	if finished {
		if _, err := ClaimWorkflowEnds(context.WithoutCancel(ctx), ws, ev, []int64{id}); err != nil {
			log.WarnContext(ctx, "workflow end events: claim ends", "err", err)
		}
	}
}

// WorkflowInfo is a stored workflow as queuemax.Client.Workflow and
// Workflows return it: a step's status is StepWaiting, its job's status,
// completed for a released step whose row was deleted as it completed, or
// the status it ended with.
func WorkflowInfo(r *store.WorkflowRecord) *queuemaxtype.WorkflowInfo {
	w := &queuemaxtype.WorkflowInfo{ID: queuemaxtype.WorkflowID(r.ID), Name: r.Name, Status: queuemaxtype.WorkflowStatus(r.Status),
		CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
	for _, s := range r.Steps {
		st := queuemaxtype.WorkflowStep{Name: s.Name, Task: s.Task, JobID: s.JobID, After: s.After, AfterSettled: s.Settled, Reason: s.Reason}
		for _, b := range s.Binds {
			st.Binds = append(st.Binds, queuemaxtype.StepBinding{Param: b.Param, From: b.From})
		}
		switch s.State {
		case store.StepWaiting:
			st.Status = queuemaxtype.StepWaiting
		case store.StepReady:
			st.Status = s.Job
			if st.Status == "" {
				st.Status = queuemaxtype.StatusCompleted // its row was deleted as it completed
			}
		default:
			st.Status = queuemaxtype.Status(s.State)
		}
		w.Steps = append(w.Steps, st)
	}
	return w
}

// WorkflowCounts counts the stored workflows by status
// (queuemax.Stats.Workflows).
func WorkflowCounts(ctx context.Context, st store.Store) (queuemaxtype.WorkflowCounts, error) {
	n, err := st.WorkflowCounts(ctx)
	if err != nil {
		return queuemaxtype.WorkflowCounts{}, err
	}
	return queuemaxtype.WorkflowCounts{Running: n[store.WorkflowRunning], Completed: n[store.WorkflowCompleted],
		Failed: n[store.WorkflowFailed], Cancelled: n[store.WorkflowCancelled]}, nil
}
