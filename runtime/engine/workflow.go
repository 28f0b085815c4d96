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
	var jobs []store.JobID
	for i, a := range as {
		if errs[i] != nil || a.Job.Workflow == 0 {
			continue
		}
		switch a.Outcome {
		case queuemaxtype.OutcomeCompleted, queuemaxtype.OutcomeDeadLettered, queuemaxtype.OutcomeCancelled:
			jobs = append(jobs, a.Job.ID)
		}
	}
	if len(jobs) > 0 {
		EmitWorkflowEnds(ctx, x.cfg.Store, x.cfg.Events, jobs, x.cfg.Log.WarnContext)
	}
}

// EmitWorkflowEnds emits EventWorkflowCompleted or EventWorkflowFailed
// for each workflow whose last step to end was one of jobs, whose ends
// the caller has just committed (so no other process emits them).
func EmitWorkflowEnds(ctx context.Context, st store.Store, ev *Events, jobs []store.JobID, warn func(context.Context, string, ...any)) {
	if ev == nil {
		return
	}
	ended, err := st.FinishedBy(context.WithoutCancel(ctx), jobs)
	if err != nil && warn != nil {
		warn(ctx, "workflow end events: read finished workflows", "err", err)
	}
	for _, w := range ended {
		EmitWorkflowEnd(ctx, ev, w)
	}
}

// EmitWorkflowEnd emits the end event of finished workflow w.
func EmitWorkflowEnd(ctx context.Context, ev *Events, w *store.WorkflowRecord) {
	e := Event{Kind: queuemaxtype.EventWorkflowCompleted, Workflow: w.ID, WorkflowName: w.Name, Time: w.FinishedAt,
		Shard: store.JobID(w.ID).Shard()}
	if w.Status != store.WorkflowCompleted {
		e.Kind, e.Error = queuemaxtype.EventWorkflowFailed, w.Status
	}
	ev.Emit(ctx, e)
}
