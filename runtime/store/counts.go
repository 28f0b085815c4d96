package store

import "context"

// JobCount is how many jobs of one task have one status in one shard.
type JobCount struct {
	Shard  int
	Task   string
	Status Status
	Count  int64
}

// JobCounter is an optional upgrade of Store: stores that can count every
// shard's jobs by task and status in one pass implement it, for metrics.
// Counts of zero are left out.
type JobCounter interface {
	JobCounts(ctx context.Context) ([]JobCount, error)
}
