package store

import (
	"encoding/json"
	"time"
)

// TaskRecord is one task of the task catalogue: what the store knows about
// a task that a worker ran, kept after every worker stopped, so that a
// process without the task's handler (the CLI, an admin API, a producer)
// resolves names and checks payloads the same way whatever is running.
type TaskRecord struct {
	// Name is the task name stored in job rows.
	Name string
	// Info is an opaque JSON object: the root package defines its shape
	// (payload schema, defaults, aliases).
	Info      json.RawMessage
	UpdatedAt time.Time
}
