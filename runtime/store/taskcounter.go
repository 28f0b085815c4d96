package store

import "context"

// TaskCounter is implemented by stores that count every task's jobs by
// shard and status in one pass (the dashboard's per-task table). Callers
// fall back to TaskCounts per known task name when a store lacks it.
type TaskCounter interface {
	// AllTaskCounts returns one row per (shard, task, status) that has
	// jobs, and one row per (shard, task) with Status "" counting its
	// dead-letter rows.
	AllTaskCounts(ctx context.Context) ([]TaskCount, error)
}

// TaskCount is one row of AllTaskCounts.
type TaskCount struct {
	Shard  int
	Task   string
	Status Status // "" for the dead-letter count
	Count  int64
}
