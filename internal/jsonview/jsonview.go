// Package jsonview is the one JSON shape of jobs, dead letters and shard
// counts that the CLI's --json output and the admin HTTP API both print,
// so a script can read either.
package jsonview

import (
	"encoding/json"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// Job is a job as JSON. RunAt and NextRunAt are the same time (when a
// scheduled job or retry is due): the CLI printed the first name and the
// admin API the second, and both keep working.
type Job struct {
	ID           queuemaxtype.JobID  `json:"id"`
	Shard        int                 `json:"shard"`
	Task         string              `json:"task"`
	Status       queuemaxtype.Status `json:"status"`
	Priority     int                 `json:"priority"`
	Attempts     int                 `json:"attempts"`
	MaxAttempts  int                 `json:"max_attempts"`
	Key          *int64              `json:"key,omitempty"`
	Payload      json.RawMessage     `json:"payload"`
	Result       json.RawMessage     `json:"result,omitempty"`
	LastError    string              `json:"last_error,omitempty"`
	ErrorType    string              `json:"error_type,omitempty"`
	WorkerID     string              `json:"worker_id,omitempty"`
	CreatedAt    *time.Time          `json:"created_at,omitempty"`
	RunAt        *time.Time          `json:"run_at,omitempty"`
	NextRunAt    *time.Time          `json:"next_run_at,omitempty"`
	StartedAt    *time.Time          `json:"started_at,omitempty"`
	Heartbeat    *time.Time          `json:"heartbeat,omitempty"`
	CompletedAt  *time.Time          `json:"completed_at,omitempty"`
	RetryDelayMS int64               `json:"retry_delay_ms,omitempty"`
	// CancelRequested: Cancel was called while the job runs.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	Snoozes         int  `json:"snoozes"`
	// TimeoutMS is the job's own timeout (Opts.Timeout), if any.
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
	Tags      []string        `json:"tags,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Queue     string          `json:"queue"`
	// UniqueKey is a unique job's key (see queuemax.UniqueOpts).
	UniqueKey string `json:"unique_key,omitempty"`
	// Held says why a ready job is not being claimed (an open circuit
	// breaker, a global limit); see queuemax.Job.Held.
	Held string `json:"held,omitempty"`
	// WorkflowID is the workflow a step's job belongs to.
	WorkflowID int64 `json:"workflow_id,omitempty"`
	// Steps is the progress of the job's steps (queuemax.Step, Do,
	// SetCursor), in order.
	Steps []JobStep `json:"steps,omitempty"`
}

// JobStep is one job step's recorded progress as JSON.
type JobStep struct {
	Name      string          `json:"name"`
	Done      bool            `json:"done"`
	Result    json.RawMessage `json:"result,omitempty"`
	Cursor    json.RawMessage `json:"cursor,omitempty"`
	UpdatedAt *time.Time      `json:"updated_at,omitempty"`
}

// NewJobSteps returns steps' JSON view (nil for none).
func NewJobSteps(steps []queuemaxtype.JobStep) []JobStep {
	if len(steps) == 0 {
		return nil
	}
	out := make([]JobStep, len(steps))
	for i, s := range steps {
		out[i] = JobStep{Name: s.Name, Done: s.Done, Result: s.Result, Cursor: s.Cursor, UpdatedAt: Time(s.UpdatedAt)}
	}
	return out
}

// NewJob returns j's JSON view.
func NewJob(j *queuemaxtype.Job) Job {
	next := Time(j.NextRetryAt)
	return Job{
		ID: j.ID, Shard: j.Shard, Task: j.Task, Status: j.Status, Priority: int(j.Priority),
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Key: j.PartitionKey,
		Payload: j.Payload, Result: j.Result, LastError: j.LastError, ErrorType: j.ErrorType,
		WorkerID: j.WorkerID, CreatedAt: Time(j.CreatedAt), RunAt: next, NextRunAt: next,
		StartedAt: Time(j.StartedAt), Heartbeat: Time(j.Heartbeat), CompletedAt: Time(j.CompletedAt),
		RetryDelayMS: j.RetryDelay.Milliseconds(), CancelRequested: j.CancelRequested,
		Snoozes: j.Snoozes, TimeoutMS: j.Timeout.Milliseconds(), Tags: j.Tags, Metadata: j.Metadata, Queue: j.Queue,
		UniqueKey: j.UniqueKey, Held: j.Held, WorkflowID: j.Workflow, Steps: NewJobSteps(j.Steps),
	}
}

// DeadLetter is a dead-letter row as JSON. JobID and OriginalJobID are the
// same job (the CLI printed the first name, the admin API the second).
type DeadLetter struct {
	ID            int64              `json:"id"`
	Shard         int                `json:"shard"`
	JobID         queuemaxtype.JobID `json:"job_id,omitempty"`
	OriginalJobID queuemaxtype.JobID `json:"original_job_id,omitempty"`
	Task          string             `json:"task"`
	Payload       json.RawMessage    `json:"payload"`
	Error         string             `json:"error"`
	ErrorType     string             `json:"error_type,omitempty"`
	Attempts      int                `json:"attempts"`
	FailedAt      *time.Time         `json:"failed_at,omitempty"`
}

// NewDeadLetter returns d's JSON view.
func NewDeadLetter(d *queuemaxtype.DeadLetter) DeadLetter {
	return DeadLetter{ID: d.ID, Shard: d.Shard, JobID: d.OriginalJobID, OriginalJobID: d.OriginalJobID, Task: d.Task,
		Payload: d.Payload, Error: d.Error, ErrorType: d.ErrorType, Attempts: d.Attempts, FailedAt: Time(d.FailedAt)}
}

// Shard is one shard's counts as JSON.
type Shard struct {
	Shard                int        `json:"shard"`
	Pending              int64      `json:"pending"`
	Scheduled            int64      `json:"scheduled"`
	Processing           int64      `json:"processing"`
	Failed               int64      `json:"failed"`
	Completed            int64      `json:"completed"`
	DeadLetters          int64      `json:"dead_letters"`
	TotalProcessed       int64      `json:"total_processed"`
	TotalFailed          int64      `json:"total_failed"`
	OldestPending        *time.Time `json:"oldest_pending,omitempty"`
	AvgProcessingSeconds float64    `json:"avg_processing_seconds"`
	Healthy              bool       `json:"healthy"`
	LastError            string     `json:"last_error,omitempty"`
}

// NewShard returns s's JSON view.
func NewShard(s queuemaxtype.ShardStats) Shard {
	return Shard{
		Shard: s.Shard, Pending: s.Pending, Scheduled: s.Scheduled, Processing: s.Processing,
		Failed: s.Failed, Completed: s.Completed, DeadLetters: s.DeadLetters,
		TotalProcessed: s.TotalProcessed, TotalFailed: s.TotalFailed,
		OldestPending: Time(s.OldestPending), AvgProcessingSeconds: s.AvgProcessingTime.Seconds(),
		Healthy: s.Healthy, LastError: s.LastError,
	}
}

// Time returns t in UTC, or nil for the zero time (left out of the JSON).
func Time(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
