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
