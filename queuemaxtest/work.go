package queuemaxtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// DefaultMaxDrain is how many executions Drain runs before it fails the
// test, when WorkOpts.MaxDrain is zero.
const DefaultMaxDrain = 1000

// Worked is one execution run by Drain or WorkOne.
type Worked struct {
	// Job is the job as claimed for this execution (Attempts counts it).
	Job *queuemax.Job
	// WorkResult says what became of it: Outcome, Result, Err, RetryAt.
	queuemax.WorkResult
}

// WorkOpts configure DrainWith and WorkOneWith. Nil, or the zero value,
// is what Drain and WorkOne do.
type WorkOpts struct {
	// Context is the context the handlers run with, where Run's workers
	// would have Run's: put the dependencies your handlers read from their
	// context in it. Nil means tb.Context().
	Context context.Context
	// MaxDrain is how many executions DrainWith runs before failing the
	// test, which catches a job that re-enqueues itself or snoozes for
	// zero forever. Zero means DefaultMaxDrain.
	MaxDrain int
}

func (o *WorkOpts) ctx(tb testing.TB) context.Context {
	if o == nil || o.Context == nil {
		return tb.Context()
	}
	return o.Context
}

// Drain works every ready job, one at a time in the test's goroutine, in
// the order Run would claim them (priority, then oldest first, per shard),
// until none is ready, and returns the executions in order.
//
// "Ready" is decided at each claim with the real clock, so Drain also runs
// what becomes ready while it drains: jobs the handlers enqueue, jobs that
// snooze for zero, and retries whose delay has passed by the next claim.
// A retry, snooze or scheduled job due later is not waited for: it shows
// as OutcomeRetry or OutcomeSnoozed with its RetryAt in the result (or not
// at all, if it never ran) and stays stored; run it with WorkOne.
//
// A handler's error does not fail the test (it is in the result, as
// Outcome and Err). Drain fails the test if the store fails, or after
// DefaultMaxDrain executions. Handlers run with tb.Context(); DrainWith
// gives them another context (with the dependencies they expect there).
func Drain(tb testing.TB, c *queuemax.Client) []Worked {
	tb.Helper()
	return DrainWith(tb, c, nil)
}

// DrainWith is Drain with options; nil means the defaults.
func DrainWith(tb testing.TB, c *queuemax.Client, opts *WorkOpts) []Worked {
	tb.Helper()
	limit := DefaultMaxDrain
	if opts != nil && opts.MaxDrain > 0 {
		limit = opts.MaxDrain
	}
	ctx := opts.ctx(tb)
	var out []Worked
	for {
		jobs, err := c.Claim(ctx, workerID, 1)
		if err != nil {
			tb.Fatalf("queuemaxtest.Drain: claim: %v", err)
		}
		if len(jobs) == 0 {
			return out
		}
		if len(out) == limit {
			release(tb, c, jobs)
			tb.Fatalf("queuemaxtest.Drain: still jobs ready after %d executions (a job that re-enqueues itself or snoozes for zero?); last: %s",
				limit, describeJobs([]*queuemax.Job{out[len(out)-1].Job}))
		}
		out = append(out, work(ctx, tb, c, "Drain", jobs[0]))
	}
}

// WorkOne works job id once, in the test's goroutine, as Run would, and
// returns the execution: pass the ID from an enqueue or from
// RequireEnqueued. The job must be ready (pending, or scheduled with its
// time passed); WorkOne fails the test otherwise, naming its status and
// run-at time. Other ready jobs are left as they were. A handler's error
// does not fail the test; it is in the result.
//
// To run a job scheduled in the future, or a retry before its backoff
// ends, enqueue it in the test with a run-at in the past, or set the
// task's retry delay to zero for the test.
func WorkOne(tb testing.TB, c *queuemax.Client, id queuemax.JobID) Worked {
	tb.Helper()
	return WorkOneWith(tb, c, id, nil)
}

// WorkOneWith is WorkOne with options (the handler's context); nil means
// the defaults.
func WorkOneWith(tb testing.TB, c *queuemax.Client, id queuemax.JobID, opts *WorkOpts) Worked {
	tb.Helper()
	ctx := opts.ctx(tb)
	var held []*queuemax.Job
	var target *queuemax.Job
	for target == nil {
		jobs, err := c.Claim(tb.Context(), workerID, 100)
		if err != nil {
			release(tb, c, held)
			tb.Fatalf("queuemaxtest.WorkOne(%d): claim: %v", id, err)
		}
		if len(jobs) == 0 {
			break
		}
		held = append(held, jobs...)
		if i := slices.IndexFunc(jobs, func(j *queuemax.Job) bool { return j.ID == id }); i >= 0 {
			target = jobs[i]
		}
	}
	// Put back the ready jobs claimed on the way, as they were.
	release(tb, c, slices.DeleteFunc(held, func(j *queuemax.Job) bool { return j == target }))
	if target == nil {
		j, err := c.Job(tb.Context(), id)
		switch {
		case err != nil:
			tb.Fatalf("queuemaxtest.WorkOne(%d): %v", id, err)
		case j.Status == queuemax.StatusPending:
			tb.Fatalf("queuemaxtest.WorkOne(%d): job is pending but this client cannot claim it: no handler for task %q", id, j.Task)
		case j.Status == queuemax.StatusScheduled:
			tb.Fatalf("queuemaxtest.WorkOne(%d): job is %s, not ready until %s (in %s)", id, j.Status,
				j.NextRetryAt.Format(time.RFC3339), time.Until(j.NextRetryAt).Round(time.Millisecond))
		default:
			tb.Fatalf("queuemaxtest.WorkOne(%d): job is %s; only a waiting job can be worked", id, j.Status)
		}
	}
	return work(ctx, tb, c, "WorkOne", target)
}

func work(ctx context.Context, tb testing.TB, c *queuemax.Client, fn string, j *queuemax.Job) Worked {
	tb.Helper()
	res, err := c.Work(ctx, j)
	if err != nil {
		tb.Fatalf("queuemaxtest.%s: record job %d of %s: %v", fn, j.ID, j.Task, err)
	}
	return Worked{Job: j, WorkResult: res}
}

func release(tb testing.TB, c *queuemax.Client, jobs []*queuemax.Job) {
	tb.Helper()
	if len(jobs) == 0 {
		return
	}
	if err := c.Release(tb.Context(), jobs...); err != nil {
		tb.Fatalf("queuemaxtest: release claimed jobs: %v", err)
	}
}
