package queuemaxtype

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSumShards(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ss := []ShardStats{
		{Shard: 0, Pending: 1, Scheduled: 2, Processing: 1, Failed: 4, Completed: 5, DeadLetters: 6, TotalProcessed: 7,
			TotalFailed: 8, OldestPending: t0.Add(time.Minute), AvgProcessingTime: 4 * time.Second, Healthy: true},
		{Shard: 1, Pending: 10, Processing: 3, TotalProcessed: 70, OldestPending: t0, AvgProcessingTime: 8 * time.Second,
			Healthy: false, LastError: "disk I/O error"},
		{Shard: 2, Healthy: false, LastError: "later error"},
	}
	want := ShardStats{Shard: -1, Pending: 11, Scheduled: 2, Processing: 4, Failed: 4, Completed: 5, DeadLetters: 6,
		TotalProcessed: 77, TotalFailed: 8, OldestPending: t0, AvgProcessingTime: 7 * time.Second,
		Healthy: false, LastError: "disk I/O error"}
	if diff := cmp.Diff(want, SumShards(ss)); diff != "" {
		t.Errorf("SumShards (-want +got):\n%s", diff)
	}
	if got := SumShards(nil); got != (ShardStats{Shard: -1, Healthy: true}) {
		t.Errorf("SumShards(nil) = %+v, want an empty healthy sum", got)
	}
}
