package engine

import (
	"context"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Workflow steps: the store releases dependents in the transaction that
// ends a step; the engine only carries the step into its handler's
// context (for StepResult) and emits a workflow's end event after the
// write that finished it.

type stepKey struct{}

// Step is a running workflow step, as its handler's context carries it.
type Step struct {
	Store store.Store
	Job   *Job
}

// withStep returns ctx carrying j when j is a workflow step.
func withStep(ctx context.Context, st store.Store, j *Job) context.Context {
	if j.Workflow == 0 {
		return ctx
	}
	return context.WithValue(ctx, stepKey{}, &Step{Store: st, Job: j})
}

// StepFromContext returns the workflow step a handler runs, if any.
func StepFromContext(ctx context.Context) (*Step, bool) {
	s, ok := ctx.Value(stepKey{}).(*Step)
	return s, ok
}

// workflowEnds emits the end events of the workflows that the recorded
// attempts among as finished: only attempts of steps that ended their job
// (completed, dead-lettered, cancelled) can, so other jobs cost nothing.
func (x *Executor) workflowEnds(ctx context.Context, as []*Attempt, errs []error) {
	var ids []int64
	for i, a := range as {
		if errs[i] != nil || a.Job.Workflow == 0 {
			continue
		}
		switch a.Outcome {
		case queuemaxtype.OutcomeCompleted, queuemaxtype.OutcomeDeadLettered, queuemaxtype.OutcomeCancelled:
			ids = append(ids, a.Job.Workflow)
		}
	}
	if len(ids) > 0 {
		EmitWorkflowEnds(ctx, x.cfg.Store, x.cfg.Events, ids, x.cfg.Log.WarnContext)
	}
}

// EmitWorkflowEnds takes the finished workflows among ids (nil: any) from
// st and emits EventWorkflowCompleted or EventWorkflowFailed for each:
// the store hands each finished workflow to one caller only.
func EmitWorkflowEnds(ctx context.Context, st store.Store, ev *Events, ids []int64, warn func(context.Context, string, ...any)) {
	ws, ok := st.(store.WorkflowStore)
	if !ok {
		return
	}
	ended, err := ws.TakeFinishedWorkflows(context.WithoutCancel(ctx), ids)
	if err != nil && warn != nil {
		warn(ctx, "workflow end events: take finished workflows", "err", err)
	}
	for _, w := range ended {
		e := Event{Kind: queuemaxtype.EventWorkflowCompleted, Workflow: w.ID, WorkflowName: w.Name, Time: w.FinishedAt,
			Shard: store.JobID(w.ID).Shard()}
		if w.Status != store.WorkflowCompleted {
			e.Kind, e.Error = queuemaxtype.EventWorkflowFailed, w.Status
		}
		if ev != nil {
			ev.Emit(ctx, e)
		}
	}
}
