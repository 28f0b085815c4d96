package engine

import (
	"context"
	"log/slog"
	"time"

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
// the caller has just committed. It claims each end first
// (ClaimWorkflowEnds), so that an end another process's sweep announced
// already is not announced again.
func EmitWorkflowEnds(ctx context.Context, st store.Store, ev *Events, jobs []store.JobID, warn func(context.Context, string, ...any)) {
	if ev == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	ended, err := st.FinishedBy(ctx, jobs)
	if err != nil && warn != nil {
		warn(ctx, "workflow end events: read finished workflows", "err", err)
	}
	if len(ended) == 0 {
		return
	}
	ids := make([]int64, len(ended))
	for i, w := range ended {
		ids[i] = w.ID
	}
	if _, err := ClaimWorkflowEnds(ctx, st, ev, ids); err != nil && warn != nil && ctx.Err() == nil {
		warn(ctx, "workflow end events: claim ends", "err", err)
	}
}

// ClaimWorkflowEnds claims the unannounced ends of workflows ids (nil:
// any) and emits their events; it returns how many it claimed.
func ClaimWorkflowEnds(ctx context.Context, ws store.WorkflowStore, ev *Events, ids []int64) (int, error) {
	claimed, err := ws.ClaimWorkflowEnds(ctx, store.ClaimEndsParams{IDs: ids})
	for _, w := range claimed {
		EmitWorkflowEnd(ctx, ev, w)
	}
	return len(claimed), err
}

// WorkflowEnds is the service that announces the workflow ends no process
// of ours recorded: those of orphan recovery, or of queue-max writing a
// step's end into the same SQLite file. Every process running the engine
// sweeps; each end is claimed by one of them.
type WorkflowEnds struct {
	Store  store.WorkflowStore
	Events *Events
	Every  time.Duration
	Log    *slog.Logger

	out *outages // set by the engine: an outage logs a few lines, not one per round
}

func (w *WorkflowEnds) Name() string            { return "workflow ends" }
func (w *WorkflowEnds) Interval() time.Duration { return w.Every }

// RunOnce claims and announces unannounced ends until none is left. A
// failure goes to the engine's outage log (one line per outage), or to Log
// when the service runs outside an engine.
func (w *WorkflowEnds) RunOnce(ctx context.Context, _ time.Time) {
	full := store.ClaimEndsParams{}.MaxRows()
	for ctx.Err() == nil {
		n, err := ClaimWorkflowEnds(ctx, w.Store, w.Events, nil)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && w.out != nil:
			w.out.fail(ctx, slog.LevelWarn, w.Name(), "workflow end events: claim ends", err)
			return
		case err != nil && w.Log != nil:
			w.Log.WarnContext(ctx, "workflow end events: claim ends", "err", err)
			return
		case err != nil:
			return
		}
		if w.out != nil {
			w.out.ok(ctx, w.Name())
		}
		if n < full {
			return
		}
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
