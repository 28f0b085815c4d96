package store

import "time"

// JobRow is a job's stored row as a store reads it, in Go's types and
// independent of any driver: each store scans its columns into its
// driver's types (nullable ones into what its driver offers), copies them
// here and calls Job, so that what a row means (its ID, its durations, its
// defaults) is decided once for every store. A NULL column is the field's
// zero value unless the field says otherwise.
type JobRow struct {
	// Seq is the row's id within its shard; Shard its shard index.
	Seq   int64
	Shard int
	// PartitionKey is valid when HasPartitionKey.
	PartitionKey    int64
	HasPartitionKey bool
	Task            string
	Payload         []byte
	// Status is empty in a claim's row, which is always processing.
	Status       string
	Priority     int
	Attempts     int
	MaxAttempts  int
	RetryDelayMS int64
	LastError    string
	ErrorType    string
	ErrorStack   string
	WorkerID     string
	Lease        int64
	// The row's times, zero when NULL, as the store reads them (UTC).
	Heartbeat, CreatedAt, StartedAt, CompletedAt, NextRetryAt time.Time
	Result                                                    []byte
	Metadata                                                  []byte
	CancelRequested                                           bool
	Snoozes                                                   int
	TimeoutMS                                                 int64
	// Tags are the job's tags; an empty list reads as none.
	Tags      []string
	Queue     string
	UniqueKey string
	// Workflow is the workflow's row id in the job's shard, valid when
	// HasWorkflow.
	Workflow    int64
	HasWorkflow bool
	// Progress is the stored progress document (DecodeProgress).
	Progress []byte
}

// Job returns the job the row holds.
func (r *JobRow) Job() *Job {
	j := new(Job)
	r.Fill(j)
	return j
}

// Fill sets j to the job the row holds, so that a store reading many rows
// can allocate its jobs in blocks.
func (r *JobRow) Fill(j *Job) {
	*j = Job{
		ID:              NewJobID(r.Shard, r.Seq),
		Shard:           r.Shard,
		Task:            r.Task,
		Payload:         r.Payload,
		Status:          Status(r.Status),
		Priority:        Priority(r.Priority),
		Attempts:        r.Attempts,
		MaxAttempts:     r.MaxAttempts,
		RetryDelay:      time.Duration(r.RetryDelayMS) * time.Millisecond,
		LastError:       r.LastError,
		ErrorType:       r.ErrorType,
		ErrorStack:      r.ErrorStack,
		WorkerID:        r.WorkerID,
		Lease:           r.Lease,
		Heartbeat:       r.Heartbeat,
		CreatedAt:       r.CreatedAt,
		StartedAt:       r.StartedAt,
		CompletedAt:     r.CompletedAt,
		NextRetryAt:     r.NextRetryAt,
		Result:          r.Result,
		Metadata:        r.Metadata,
		CancelRequested: r.CancelRequested,
		Snoozes:         r.Snoozes,
		Queue:           QueueOf(r.Queue),
		Timeout:         time.Duration(r.TimeoutMS) * time.Millisecond,
		UniqueKey:       r.UniqueKey,
	}
	if r.HasPartitionKey {
		k := r.PartitionKey
		j.PartitionKey = &k
	}
	if len(r.Tags) > 0 {
		j.Tags = r.Tags
	}
	if r.HasWorkflow {
		j.Workflow = int64(NewJobID(r.Shard, r.Workflow))
	}
	if len(r.Progress) > 0 {
		j.Steps = DecodeProgress(r.Progress)
	}
}
