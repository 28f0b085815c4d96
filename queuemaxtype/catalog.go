package queuemaxtype

import (
	"encoding/json"
	"time"
)

// PeriodicInfo describes one periodic task as the scheduler stored it.
type PeriodicInfo struct {
	Task     string    `json:"task"`
	Schedule string    `json:"schedule"` // "@every 1h0m0s" or the cron spec
	Misfire  string    `json:"misfire"`
	NextRun  time.Time `json:"next_run"`
	LastRun  time.Time `json:"last_run,omitzero"` // the last slot enqueued; zero if none
	// LastJobID is the job enqueued for LastRun, and LastOutcome its state:
	// "pending", "scheduled", "processing", "completed", "failed", or ""
	// if it never ran. A completed job without a result is deleted, so a
	// job that is gone reads "completed".
	LastJobID   JobID  `json:"last_job_id,omitzero"`
	LastOutcome string `json:"last_outcome,omitempty"`
}

// CatalogTask is one task of the store's task catalogue: what Run of some
// process published about a task it runs (its name, earlier names, payload
// schema and defaults), kept after every worker stopped. A client without
// the task's handler (the queuemax CLI, the admin API of a producer)
// resolves task names against it, so that a name resolves the same way
// whatever is running.
type CatalogTask struct {
	Name       string          `json:"name"`
	Aliases    []string        `json:"aliases,omitempty"`
	Schema     json.RawMessage `json:"schema,omitempty"` // see queuemax.PayloadSchema; none for hand-written handlers
	Priority   Priority        `json:"priority"`
	MaxRetries *int            `json:"max_retries,omitempty"`
	Queue      string          `json:"queue,omitempty"`
	UpdatedAt  time.Time       `json:"updated_at"`
}
