package store

import (
	"context"
	"time"
)

// TaskBacklogger is implemented by stores that can count waiting jobs per
// task cheaply. The root package uses it for Stats' per-task figures and
// its "no live handler" warnings; a store without it reports none.
type TaskBacklogger interface {
	// TaskBacklog returns, per task name, how many jobs are pending (ready)
	// and scheduled (waiting for a run-at or retry time), over every
	// shard. Tasks with neither are left out.
	TaskBacklog(ctx context.Context) (map[string]TaskBacklog, error)
	// CreatedAt returns when the queue was created (the earliest shard
	// creation time), or the zero time if the store does not know.
	CreatedAt(ctx context.Context) (time.Time, error)
	// WaitingCount returns how many jobs are pending or scheduled over
	// every shard: one indexed count per shard, for alert checks.
	WaitingCount(ctx context.Context) (int64, error)
}

// TaskBacklog counts one task's waiting jobs.
type TaskBacklog struct {
	Pending   int64
	Scheduled int64
}
