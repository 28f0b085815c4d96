package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// The logic of the root package's StepResult and Client.CancelWorkflow,
// which forward here.

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
