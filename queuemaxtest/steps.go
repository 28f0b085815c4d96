package queuemaxtest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
)

// StepDone is a job step to record as completed with SetStepsDone, as if an
// earlier attempt had run it: Result is what its function returned (nil
// for a Do step), stored JSON-encoded as Step stores it.
type StepDone struct {
	Name   string
	Result any
}

// SetStepsDone records steps of job id as completed, in order, replacing
// what the job recorded before: the next run of the job skips them (Step
// returns each one's Result without calling its function) and runs the
// rest. Use it to test a handler's resumption without making an attempt
// fail first:
//
//	id, _ := c.Enqueue(ctx, "shop.Order", order, queuemax.Opts{})
//	queuemaxtest.SetStepsDone(t, c, id, queuemaxtest.StepDone{Name: "charge", Result: receipt})
//	w := queuemaxtest.WorkOne(t, c, id)
//	queuemaxtest.RequireStepsRan(t, w, "ship", "email")
//
// The job must not be running. SetStepsDone fails the test if a Result
// cannot be encoded or the job cannot be written (an unknown ID, a step
// name used twice or not valid).
func SetStepsDone(tb testing.TB, c *queuemax.Client, id queuemax.JobID, steps ...StepDone) {
	tb.Helper()
	recs := make([]queuemax.JobStep, len(steps))
	for i, s := range steps {
		b, err := json.Marshal(s.Result)
		if err != nil {
			tb.Fatalf("queuemaxtest.SetStepsDone(%d): step %q: encode its result: %v", id, s.Name, err)
		}
		recs[i] = queuemax.JobStep{Name: s.Name, Done: true, Result: b}
	}
	if err := c.ResetJobSteps(tb.Context(), id, recs); err != nil {
		tb.Fatalf("queuemaxtest.SetStepsDone(%d): %v", id, err)
	}
}

// RequireStepsRan fails the test unless the job steps whose function
// execution w called are exactly names, in order. The steps it skipped
// because they were recorded as done are in w.StepsSkipped.
func RequireStepsRan(tb testing.TB, w Worked, names ...string) {
	tb.Helper()
	if !slices.Equal(w.StepsRun, names) && !(len(names) == 0 && len(w.StepsRun) == 0) {
		tb.Fatalf("queuemaxtest.RequireStepsRan: job %d (%s) ran steps [%s], want [%s] (skipped as done: [%s])",
			w.Job.ID, w.Job.Task, strings.Join(w.StepsRun, ", "), strings.Join(names, ", "), strings.Join(w.StepsSkipped, ", "))
	}
}
