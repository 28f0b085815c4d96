package store

import "github.com/queuemax/queuemax/queuemaxtype"

// JobCount is one row of Store.JobCounts; see queuemaxtype.JobCount.
type JobCount = queuemaxtype.JobCount

// TaskBacklog counts one task's waiting jobs (Store.TaskBacklog).
type TaskBacklog struct {
	Pending   int64
	Scheduled int64
}

// SetCount records n jobs of status in st (Stats' per-status counts;
// cancelled jobs have no field there and are left out).
func SetCount(st *ShardStats, status Status, n int64) {
	switch status {
	case StatusPending:
		st.Pending = n
	case StatusScheduled:
		st.Scheduled = n
	case StatusProcessing:
		st.Processing = n
	case StatusFailed:
		st.Failed = n
	case StatusCompleted:
		st.Completed = n
	}
}
