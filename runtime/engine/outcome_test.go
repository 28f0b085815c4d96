package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// Outcome and the recorded decision agree: Decide is built on Outcome.
func TestOutcome_MatchesDecide(t *testing.T) {
	t.Parallel()
	x := NewExecutor(ExecConfig{MaxSnoozes: 5, RetryDelay: time.Second})
	boom := errors.New("boom")
	for _, tt := range []struct {
		job Job
		err error
	}{
		{Job{Attempts: 1, MaxAttempts: 3}, boom},
		{Job{Attempts: 3, MaxAttempts: 3}, boom},
		{Job{Attempts: 1, MaxAttempts: 3}, queuemaxtype.Permanent(boom)},
		{Job{Attempts: 3, MaxAttempts: 3}, queuemaxtype.Snooze(time.Minute)},
		{Job{Attempts: 1, MaxAttempts: 3}, queuemaxtype.Cancel(boom)},
	} {
		a := Attempt{Job: &tt.job, Err: tt.err}
		x.Prepare(&a)
		if want := Outcome(&tt.job, tt.err); a.Outcome != want {
			t.Errorf("job %+v, err %v: Prepare decides %s, Outcome says %s", tt.job, tt.err, a.Outcome, want)
		}
	}
}

// A snooze past MaxSnoozes is dead-lettered; Outcome, which cannot see the
// count, says snoozed.
func TestDecide_SnoozeLimit(t *testing.T) {
	t.Parallel()
	x := NewExecutor(ExecConfig{MaxSnoozes: 2})
	j := &Job{Attempts: 1, MaxAttempts: 3, Snoozes: 2}
	if out := x.Decide(j, queuemaxtype.Snooze(time.Minute)); !out.Dead || out.Snoozed || out.Decision.Reason != "snooze limit" {
		t.Errorf("Decide = %+v, want dead by the snooze limit", out)
	}
}

// countedStatusErr counts how often a classification reads its status code.
type countedStatusErr struct{ reads *int }

func (e countedStatusErr) Error() string   { return "503" }
func (e countedStatusErr) StatusCode() int { *e.reads++; return 503 }

// A failure is classified once: Prepare (Decide) reads the error's status
// code once, and decides the retry or the dead letter from that one
// reading.
func TestDecide_ClassifiesOnce(t *testing.T) {
	t.Parallel()
	x := NewExecutor(ExecConfig{MaxSnoozes: 5, RetryDelay: time.Second})
	for _, job := range []Job{{Attempts: 1, MaxAttempts: 3}, {Attempts: 3, MaxAttempts: 3}} {
		reads := 0
		a := Attempt{Job: &job, Err: countedStatusErr{&reads}}
		x.Prepare(&a)
		if reads != 1 {
			t.Errorf("job %+v: the error's status code was read %d times, want once", job, reads)
		}
		if want := job.Attempts >= job.MaxAttempts; a.Fail.Dead != want || a.Fail.Decision.Reason != "http server error" {
			t.Errorf("job %+v: Fail = %+v, want dead %v from the http server error", job, a.Fail, want)
		}
	}
}
