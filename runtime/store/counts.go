package store

import (
	"context"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// JobCount is how many jobs of one task have one status in one shard.
type JobCount = queuemaxtype.JobCount

// JobCounter is an optional upgrade of Store: stores that can count every
// shard's jobs by task and status in one pass implement it, for metrics.
// Counts of zero are left out.
type JobCounter interface {
	JobCounts(ctx context.Context) ([]JobCount, error)
}
