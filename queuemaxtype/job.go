package queuemaxtype

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// JobID identifies a job across all shards of a data directory. It packs the
// shard index into the low 10 bits and the shard-local row id (fila.id) above
// them, so IDs are globally unique, and Shard and Seq recover both halves.
type JobID int64

const shardBits = 10

// MaxSeq is the largest shard-local row id a JobID can hold.
const MaxSeq = 1<<(63-shardBits) - 1

// NewJobID returns the JobID of row seq in shard.
func NewJobID(shard int, seq int64) JobID { return JobID(seq<<shardBits | int64(shard)) }

// Shard returns the shard index that holds the job.
func (id JobID) Shard() int { return int(int64(id) & (1<<shardBits - 1)) }

// Seq returns the shard-local row id (fila.id).
func (id JobID) Seq() int64 { return int64(id) >> shardBits }

// String returns the decimal form of id, which ParseJobID accepts.
func (id JobID) String() string { return strconv.FormatInt(int64(id), 10) }

// ParseJobID parses the decimal form of a JobID, or the "shard:seq" form
// that names a queue-max row by its shard and local id.
func ParseJobID(s string) (JobID, error) {
	if sh, seq, ok := strings.Cut(s, ":"); ok {
		a, err1 := strconv.Atoi(sh)
		b, err2 := strconv.ParseInt(seq, 10, 64)
		if err1 != nil || err2 != nil || a < 0 || a >= 1<<shardBits || b < 1 || b > MaxSeq {
			return 0, fmt.Errorf("queuemax: invalid job id %q (want a number or shard:seq)", s)
		}
		return NewJobID(a, b), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("queuemax: invalid job id %q (want a number or shard:seq)", s)
	}
	return JobID(n), nil
}

// Status is the state of a job row (fila.status).
type Status string

// Statuses. Completed rows are kept for the client's completed-job
// retention (Config.CompletedRetention); with retention off, only those
// that stored a result are kept and the others are deleted at once, as in
// queue-max.
const (
	StatusPending    Status = "pending"
	StatusScheduled  Status = "scheduled" // waiting for its run-at or retry time
	StatusProcessing Status = "processing"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed" // dead: also in the dead-letter queue
	StatusCancelled  Status = "cancelled"
)

// Statuses lists every valid status.
var Statuses = []Status{StatusPending, StatusScheduled, StatusProcessing, StatusCompleted, StatusFailed, StatusCancelled}

// ParseStatus returns the Status named s, or an error naming the valid ones.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, nil
		}
	}
	names := make([]string, len(Statuses))
	for i, st := range Statuses {
		names[i] = string(st)
	}
	return "", fmt.Errorf("queuemax: unknown status %q (valid: %s)", s, strings.Join(names, ", "))
}

// Priority orders jobs within a shard: higher runs first.
type Priority int

// Priorities, as in queue-max.
const (
	PriorityLow    Priority = 0
	PriorityMedium Priority = 1
	PriorityHigh   Priority = 2
)

// Valid reports whether p is one of the three priorities.
func (p Priority) Valid() bool { return p >= PriorityLow && p <= PriorityHigh }

// String returns "low", "medium" or "high".
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityMedium:
		return "medium"
	case PriorityHigh:
		return "high"
	}
	return "priority(" + strconv.Itoa(int(p)) + ")"
}

// Job is one stored job. Times are UTC; a zero time means "not set".
type Job struct {
	ID           JobID
	Shard        int
	Task         string          // task name (kind); empty for raw queue-max payloads
	Payload      json.RawMessage // a JSON object
	PartitionKey *int64          // fila.pagina_id
	Status       Status
	Priority     Priority
	Attempts     int // claims so far, including the current one (fila.tentativas)
	MaxAttempts  int // max retries + 1 (fila.max_tentativas)
	RetryDelay   time.Duration
	LastError    string
	ErrorType    string
	ErrorStack   string
	WorkerID     string
	Lease        int64 // token of the current claim; 0 when not processing
	Result       json.RawMessage
	Heartbeat    time.Time
	CreatedAt    time.Time
	StartedAt    time.Time
	CompletedAt  time.Time
	NextRetryAt  time.Time       // run-at or retry time
	Metadata     json.RawMessage // the JSON object stored at enqueue; nil if none
	// CancelRequested is true for a processing job that Cancel asked to
	// stop; its worker learns of it at the next heartbeat.
	CancelRequested bool
	// Snoozes counts how often the job's handler snoozed it (Snooze):
	// runs that spent no attempt.
	Snoozes int
	// Queue is the named queue the job waits in: "default" unless the
	// task or the enqueue named one.
	Queue string
	// Timeout is the job's own execution timeout (Opts.Timeout), which
	// overrides its task's; zero if it has none.
	Timeout time.Duration
	// Tags are the job's tags (Opts.Tags or the task's defaults); nil if
	// none.
	Tags []string
	// UniqueKey is the key of a unique job (a hash of its task, arguments
	// or user key, partition key and period window); empty for others.
	// While the job's status is among its counted ones, an enqueue with
	// the same key returns this job instead of inserting another.
	UniqueKey string
	// Held says why a job that is ready to run is not being claimed: its
	// task's circuit breaker is open, or a global limit of its task or
	// queue is reached (rate or concurrency, per key with limit_by). It is
	// filled by listings (Client.Job, Client.Jobs, the CLI, the admin
	// API) from the limits' stored state; empty when nothing holds it.
	// A held job is neither failed nor counted as retried.
	Held string
	// Workflow is the workflow (queuemax.WorkflowID) a step's job belongs
	// to; zero for a job that is not a workflow step.
	Workflow int64
	// Steps is the job steps' recorded progress (queuemax.Step, Do and
	// SetCursor), in the order the steps first recorded it; nil for a
	// job that recorded none. Filled by Client.Job and Client.Jobs, not
	// by claims.
	Steps []JobStep
}

// IsPending reports whether the job waits to run (now or at a later time).
func (j *Job) IsPending() bool { return j.Status == StatusPending || j.Status == StatusScheduled }

// IsScheduled reports whether the job waits for a future run-at or retry time.
func (j *Job) IsScheduled() bool { return j.Status == StatusScheduled }

// IsProcessing reports whether a worker holds the job.
func (j *Job) IsProcessing() bool { return j.Status == StatusProcessing }

// IsCompleted reports whether the job finished successfully.
func (j *Job) IsCompleted() bool { return j.Status == StatusCompleted }

// IsFailed reports whether the job failed for good (it is dead-lettered).
func (j *Job) IsFailed() bool { return j.Status == StatusFailed }

// IsCancelled reports whether the job was cancelled.
func (j *Job) IsCancelled() bool { return j.Status == StatusCancelled }

// IsTerminal reports whether the job is completed, failed or cancelled.
func (j *Job) IsTerminal() bool { return j.IsCompleted() || j.IsFailed() || j.IsCancelled() }

// CanRetry reports whether a failed job still has attempts left, as
// queue-max's can_retry does (status failed and attempts < max attempts).
func (j *Job) CanRetry() bool { return j.IsFailed() && j.Attempts < j.MaxAttempts }

// RemainingRetries returns max(0, MaxAttempts-Attempts).
func (j *Job) RemainingRetries() int { return max(0, j.MaxAttempts-j.Attempts) }

// Age returns how long ago the job was created, as of now.
func (j *Job) Age(now time.Time) time.Duration {
	if j.CreatedAt.IsZero() {
		return 0
	}
	return now.Sub(j.CreatedAt)
}

// ProcessingTime returns CompletedAt-StartedAt, and false unless both are set.
func (j *Job) ProcessingTime() (time.Duration, bool) {
	if j.StartedAt.IsZero() || j.CompletedAt.IsZero() {
		return 0, false
	}
	return j.CompletedAt.Sub(j.StartedAt), true
}

// QueueWait returns how long the job waited between becoming ready (its
// run-at or retry time, else its creation) and its start; zero if either is
// not recorded or the clocks disagree.
func (j *Job) QueueWait() time.Duration {
	ready := j.CreatedAt
	if !j.NextRetryAt.IsZero() {
		ready = j.NextRetryAt
	}
	if ready.IsZero() || j.StartedAt.IsZero() {
		return 0
	}
	return max(0, j.StartedAt.Sub(ready))
}

// DeadLetter is one row of the dead-letter queue.
type DeadLetter struct {
	ID            int64 // dead_letter_queue.id, local to Shard
	Shard         int
	OriginalJobID JobID // zero if the row did not record one
	Task          string
	Payload       json.RawMessage
	Error         string
	ErrorType     string
	Attempts      int
	FailedAt      time.Time
}
