package queuemax

import (
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/queuemax/queuemax/runtime/engine"
)

// WorkResult is what became of one execution run by Client.Work.
type WorkResult struct {
	// Outcome is OutcomeCompleted, OutcomeRetry, OutcomeSnoozed,
	// OutcomeCancelled or OutcomeDeadLettered, as recorded (a snooze past
	// Config.MaxSnoozes is OutcomeDeadLettered here).
	Outcome string
	// Result is the handler's result when it completed, else nil.
	Result any
	// Err is the handler's error (wrapped as the queue recorded it: a
	// timeout, a panic), nil when it completed.
	Err error
	// RetryAt is when the job runs again after OutcomeRetry or
	// OutcomeSnoozed; zero otherwise.
	RetryAt time.Time
	// StepsRun names the job steps (Step, Do) whose function this
	// execution called, in order; StepsSkipped those it returned from
	// an earlier attempt's record without calling the function.
	StepsRun, StepsSkipped []string
}

// Work runs the handler of job, which the caller claimed with Claim, in
// this goroutine as Run's workers do (Hooks.OnStart, the work middleware,
// the task's timeout and inline retries, a panic turned into an error),
// then records the outcome as they do, through the same function
// (completion, kept for Config.CompletedRetention like Run's, retry,
// snooze, cancellation or dead letter, with its event and hooks) and
// returns it.
// The rate limits and circuit breakers that Run applies when it claims do
// not apply. Work returns an error, recording nothing more, only when the
// outcome could not be stored: ErrLeaseLost if the claim no longer holds.
//
// Work is the synchronous entry point for tests (package queuemaxtest
// builds Drain and WorkOne on it) and for callers that claim jobs
// themselves.
func (c *Client) Work(ctx context.Context, job *Job) (WorkResult, error) {
	var steps engine.StepLog
	result, jobErr := c.exec.Execute(engine.WithStepLog(ctx, &steps), job)
	a := engine.Attempt{Job: job, Ctx: ctx, Result: result, Err: jobErr, Ran: true}
	if err := c.exec.Finish(ctx, []*engine.Attempt{&a}, engine.FinishOpts{})[0]; err != nil {
		return WorkResult{}, err
	}
	res := WorkResult{Outcome: a.Outcome}
	res.StepsRun, res.StepsSkipped = steps.Names()
	if a.Succeeded() {
		res.Result = a.Result
		return res, nil
	}
	res.Err = a.Err
	if !a.Fail.Dead {
		res.RetryAt = a.Fail.RetryAt
	}
	return res, nil
}

// TaskNames returns, sorted, the names of c's tasks whose payload type is
// A: the handlers built by Define[A] or DefineResult[A, R], which is what
// generated code uses. A hand-written Handler has no payload type and is
// never listed. Test helpers (package queuemaxtest) use it to find the
// jobs of a typed task.
func TaskNames[A any](c *Client) []string {
	want := reflect.TypeFor[A]()
	var out []string
	for name, h := range c.handlers {
		if h.args == want {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
