package queuemax

import (
	"errors"
	"testing"
	"time"
)

func TestOutcome(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name string
		job  Job
		err  error
		want string
	}{
		{"Completed", Job{Attempts: 1, MaxAttempts: 3}, nil, OutcomeCompleted},
		{"Retry", Job{Attempts: 1, MaxAttempts: 3}, boom, OutcomeRetry},
		{"LastAttempt", Job{Attempts: 3, MaxAttempts: 3}, boom, OutcomeDeadLettered},
		{"Permanent", Job{Attempts: 1, MaxAttempts: 3}, Permanent(boom), OutcomeDeadLettered},
		// A snooze spends no attempt: even on the last one it runs again.
		{"SnoozeOnLastAttempt", Job{Attempts: 3, MaxAttempts: 3}, Snooze(time.Minute), OutcomeSnoozed},
		{"Cancel", Job{Attempts: 3, MaxAttempts: 3}, Cancel(boom), OutcomeCancelled},
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

// Outcome and the client's recorded decision agree: failOutcome is built on it.
func TestOutcome_MatchesFailOutcome(t *testing.T) {
	t.Parallel()
	c := &Client{cfg: Config{MaxSnoozes: 5, RetryDelay: time.Second}.withDefaults(), handlers: map[string]*Handler{}}
	boom := errors.New("boom")
	for _, tt := range []struct {
		job Job
		err error
	}{
		{Job{Attempts: 1, MaxAttempts: 3}, boom},
		{Job{Attempts: 3, MaxAttempts: 3}, boom},
		{Job{Attempts: 1, MaxAttempts: 3}, Permanent(boom)},
		{Job{Attempts: 3, MaxAttempts: 3}, Snooze(time.Minute)},
		{Job{Attempts: 1, MaxAttempts: 3}, Cancel(boom)},
	} {
		out := c.failOutcome(&tt.job, tt.err)
		var got string
		switch {
		case out.Cancelled:
			got = OutcomeCancelled
		case out.Snoozed:
			got = OutcomeSnoozed
		case out.Dead:
			got = OutcomeDeadLettered
		default:
			got = OutcomeRetry
		}
		if want := Outcome(&tt.job, tt.err); got != want {
			t.Errorf("job %+v, err %v: failOutcome records %s, Outcome says %s", tt.job, tt.err, got, want)
		}
	}
}
