package queuemaxtype

import (
	"testing"
	"time"
)

func TestJob_QueueWait(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		job  Job
		want time.Duration
	}{
		{"FromCreation", Job{CreatedAt: t0, StartedAt: t0.Add(2 * time.Second)}, 2 * time.Second},
		{"FromRetryTime", Job{CreatedAt: t0, NextRetryAt: t0.Add(time.Minute), StartedAt: t0.Add(time.Minute + time.Second)}, time.Second},
		{"NotStarted", Job{CreatedAt: t0}, 0},
		{"ClockSkew", Job{CreatedAt: t0, StartedAt: t0.Add(-time.Second)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.job.QueueWait(); got != tt.want {
				t.Errorf("QueueWait = %v, want %v", got, tt.want)
			}
		})
	}
}
