package engine

import (
	"context"
	"errors"
	"fmt"
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

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err       error
		permanent bool
		delay     time.Duration
	}{
		{errors.New("connect to port 443 failed"), false, 0},
		{errors.New("404 not found"), false, 0},
		{httpErr{400}, true, 0},
		{httpErr{404}, true, 0},
		{httpErr{408}, false, 0},
		{httpErr{429}, false, 0},
		{httpErr{500}, false, 0},
		{fmt.Errorf("wrapped: %w", httpErr{403}), true, 0},
		{queuemaxtype.Permanent(errors.New("x")), true, 0},
		{queuemaxtype.RetryAfter(3*time.Second, httpErr{429}), false, 3 * time.Second},
		{context.DeadlineExceeded, false, 0},
		{&queuemaxtype.TimeoutError{Limit: time.Second}, false, 0},
	}
	for _, tt := range tests {
		d := Classify(tt.err)
		if d.Permanent != tt.permanent || d.Delay != tt.delay {
			t.Errorf("Classify(%v) = %+v, want permanent=%v delay=%v", tt.err, d, tt.permanent, tt.delay)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n      int
		lo, hi time.Duration
	}{
		{1, 48 * time.Second, 72 * time.Second},
		{2, 96 * time.Second, 144 * time.Second},
		{3, 192 * time.Second, 288 * time.Second},
		{7, 3072 * time.Second, time.Hour},
		{8, time.Hour, time.Hour},
		{100, time.Hour, time.Hour},
	} {
		for range 200 {
			if d := Backoff(time.Minute, tt.n); d < tt.lo || d > tt.hi {
				t.Fatalf("Backoff(1m, %d) = %v, want within [%v, %v]", tt.n, d, tt.lo, tt.hi)
			}
		}
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name string
		job  Job
		err  error
		want string
	}{
		{"Completed", Job{Attempts: 1, MaxAttempts: 3}, nil, queuemaxtype.OutcomeCompleted},
		{"Retry", Job{Attempts: 1, MaxAttempts: 3}, boom, queuemaxtype.OutcomeRetry},
		{"LastAttempt", Job{Attempts: 3, MaxAttempts: 3}, boom, queuemaxtype.OutcomeDeadLettered},
		{"Permanent", Job{Attempts: 1, MaxAttempts: 3}, queuemaxtype.Permanent(boom), queuemaxtype.OutcomeDeadLettered},
		// A snooze spends no attempt: even on the last one it runs again.
		{"SnoozeOnLastAttempt", Job{Attempts: 3, MaxAttempts: 3}, queuemaxtype.Snooze(time.Minute), queuemaxtype.OutcomeSnoozed},
		{"Cancel", Job{Attempts: 3, MaxAttempts: 3}, queuemaxtype.Cancel(boom), queuemaxtype.OutcomeCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Outcome(&tt.job, tt.err); got != tt.want {
				t.Errorf("Outcome = %q, want %q", got, tt.want)
			}
		})
	}
}
