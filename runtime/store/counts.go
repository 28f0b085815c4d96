package store

import "github.com/queuemax/queuemax/queuemaxtype"

// JobCount is one row of Store.JobCounts; see queuemaxtype.JobCount.
type JobCount = queuemaxtype.JobCount

// TaskBacklog counts one task's waiting jobs (Store.TaskBacklog).
type TaskBacklog struct {
	Pending   int64
	Scheduled int64
}
