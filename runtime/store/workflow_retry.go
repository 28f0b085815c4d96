package store

import (
	"errors"
	"fmt"
)

// Retrying workflows and announcing their ends.
//
// RetryWorkflow reopens a failed or cancelled workflow in one transaction:
// every step that did not complete goes back to waiting (when a step it
// depends on runs again) or ready, with a fresh attempt budget; completed
// steps keep their state and result. Re-queueing one failed step's job
// (RetryJob, RetryFailed, RequeueDead) reopens that step the same way, and
// with it the steps its failure cancelled whose other hard dependencies
// did not fail: both stores do this with triggers on the job row, so that
// every path that puts a step's job back reopens its branch. A reopened
// workflow is running again (a new run: its end is announced again).
//
// Every end of a workflow run is announced once across processes: the
// workflow row keeps whether its end was announced, and ClaimWorkflowEnds
// marks ends announced atomically, returning only those it marked. The
// process that recorded an end claims it at once (the engine, through
// FinishedBy then ClaimWorkflowEnds); a sweep claims the ends that no
// process of ours recorded (orphan recovery, queue-max writing the same
// SQLite file).

// ErrWorkflowNotRetryable is returned by RetryWorkflow for a workflow that
// is running or completed, or whose failed steps' jobs are gone.
var ErrWorkflowNotRetryable = errors.New("queuemax: workflow cannot be retried")

// ClaimEndsParams selects the ended workflows ClaimWorkflowEnds claims.
type ClaimEndsParams struct {
	// IDs restricts the claim to these workflows (as returned by
	// FinishedBy); nil claims any unannounced end.
	IDs []int64
	// Limit is the most ends claimed when IDs is nil (0 means 100).
	Limit int
}

// MaxRows returns the claim's limit (100 when Limit is not positive).
func (p ClaimEndsParams) MaxRows() int {
	if p.Limit <= 0 {
		return 100
	}
	return p.Limit
}

// RetryStep is a step as RetryWorkflow reads it.
type RetryStep struct {
	Job       int64 // its job's row id
	Name      string
	State     string
	HasJob    bool   // its job row is stored
	JobStatus string // its job's status
	ErrorType string // its job's error type (WorkflowDependency: cancelled without running)
	Failed    bool   // its job is failed (dead-lettered)
	Deps      []int64
}

// Ended reports whether the step has ended.
func (s RetryStep) Ended() bool {
	return s.State != StepWaiting && s.State != StepReady
}

// bad reports whether the step ended other than completed.
func (s RetryStep) bad() bool {
	return s.State == string(StatusFailed) || s.State == string(StatusCancelled)
}

// ErrorDependency is the error type of a step cancelled because a step it
// needed did not complete.
const ErrorDependency = "WorkflowDependency"

// CheckRetrySteps returns an error wrapping ErrWorkflowNotRetryable when a
// step to reopen has no job row left (purged, or pruned on its own).
func CheckRetrySteps(wf int64, steps []RetryStep) error {
	for _, s := range steps {
		if s.bad() && !s.HasJob {
			return fmt.Errorf("%w: workflow %d: step %q: its job is no longer stored", ErrWorkflowNotRetryable, wf, s.Name)
		}
	}
	return nil
}

// RetryOrder returns the steps RetryWorkflow puts back itself, each after
// the steps it depends on: with roots, the ones that ran or were cancelled
// directly (the others come back with their dependencies); without, every
// step still not reopened.
func RetryOrder(steps []RetryStep, roots bool) []RetryStep {
	pos := make(map[int64]int, len(steps))
	for i, s := range steps {
		pos[s.Job] = i
	}
	done := make([]bool, len(steps))
	var out []RetryStep
	var visit func(i int)
	visit = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		for _, d := range steps[i].Deps {
			if k, ok := pos[d]; ok {
				visit(k)
			}
		}
		s := steps[i]
		if s.bad() && s.HasJob && (s.JobStatus == string(StatusFailed) || s.JobStatus == string(StatusCancelled)) &&
			(!roots || s.ErrorType != ErrorDependency) {
			out = append(out, s)
		}
	}
	for i := range steps {
		visit(i)
	}
	return out
}
