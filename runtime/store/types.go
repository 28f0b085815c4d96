package store

import "github.com/queuemax/queuemax/queuemaxtype"

// The job row types live in the leaf package queuemaxtype, which users read
// for their documentation; these aliases keep the store's names.
type (
	// JobID is queuemaxtype.JobID.
	JobID = queuemaxtype.JobID
	// Job is queuemaxtype.Job.
	Job = queuemaxtype.Job
	// Status is queuemaxtype.Status.
	Status = queuemaxtype.Status
	// Priority is queuemaxtype.Priority.
	Priority = queuemaxtype.Priority
	// DeadLetter is queuemaxtype.DeadLetter.
	DeadLetter = queuemaxtype.DeadLetter
)

// MaxSeq is queuemaxtype.MaxSeq.
const MaxSeq = queuemaxtype.MaxSeq

// Statuses and priorities: see queuemaxtype.
const (
	StatusPending    = queuemaxtype.StatusPending
	StatusScheduled  = queuemaxtype.StatusScheduled
	StatusProcessing = queuemaxtype.StatusProcessing
	StatusCompleted  = queuemaxtype.StatusCompleted
	StatusFailed     = queuemaxtype.StatusFailed
	StatusCancelled  = queuemaxtype.StatusCancelled

	PriorityLow    = queuemaxtype.PriorityLow
	PriorityMedium = queuemaxtype.PriorityMedium
	PriorityHigh   = queuemaxtype.PriorityHigh
)

// Statuses is queuemaxtype.Statuses.
var Statuses = queuemaxtype.Statuses

// NewJobID is queuemaxtype.NewJobID.
func NewJobID(shard int, seq int64) JobID { return queuemaxtype.NewJobID(shard, seq) }

// ParseJobID is queuemaxtype.ParseJobID.
func ParseJobID(s string) (JobID, error) { return queuemaxtype.ParseJobID(s) }

// ParseStatus is queuemaxtype.ParseStatus.
func ParseStatus(s string) (Status, error) { return queuemaxtype.ParseStatus(s) }
