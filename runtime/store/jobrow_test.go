package store

import (
	"testing"
	"time"
)

func TestJobRowFill(t *testing.T) {
	t.Parallel()

	at := time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)
	r := JobRow{
		Seq: 7, Shard: 2, PartitionKey: 9, HasPartitionKey: true, Task: "t", Payload: []byte(`{}`),
		Status: "pending", Priority: 2, Attempts: 1, MaxAttempts: 3, RetryDelayMS: 5000, TimeoutMS: 1500,
		CreatedAt: at, Tags: []string{}, Workflow: 4, HasWorkflow: true, Progress: []byte(`{"a":{"seq":1}}`),
	}
	j := r.Job()
	if j.ID != NewJobID(2, 7) || j.Shard != 2 || j.Task != "t" || j.Status != StatusPending {
		t.Fatalf("identity: got id %v shard %d task %q status %q", j.ID, j.Shard, j.Task, j.Status)
	}
	if j.PartitionKey == nil || *j.PartitionKey != 9 {
		t.Errorf("PartitionKey = %v, want 9", j.PartitionKey)
	}
	if j.RetryDelay != 5*time.Second || j.Timeout != 1500*time.Millisecond {
		t.Errorf("RetryDelay %v, Timeout %v; want 5s, 1.5s", j.RetryDelay, j.Timeout)
	}
	if j.Tags != nil {
		t.Errorf("Tags = %#v, want nil for an empty list", j.Tags)
	}
	if j.Queue != DefaultQueue {
		t.Errorf("Queue = %q, want %q for a NULL queue", j.Queue, DefaultQueue)
	}
	if j.Workflow != int64(NewJobID(2, 4)) {
		t.Errorf("Workflow = %d, want the workflow's id in the job's shard", j.Workflow)
	}
	if !j.CreatedAt.Equal(at) {
		t.Errorf("CreatedAt = %v, want %v", j.CreatedAt, at)
	}

	var none JobRow
	j = none.Job()
	if j.PartitionKey != nil || j.Workflow != 0 || j.Steps != nil || j.Tags != nil {
		t.Errorf("a row of NULLs: PartitionKey %v, Workflow %d, Steps %v, Tags %v; want none", j.PartitionKey, j.Workflow, j.Steps, j.Tags)
	}
}
