package queuemaxtype

import "time"

// ShardStats holds one shard's counts (queuemax.Stats.PerShard).
type ShardStats struct {
	Shard             int
	Pending           int64 // ready now
	Scheduled         int64 // waiting for a run-at or retry time
	Processing        int64
	Failed            int64 // dead (also in the dead-letter queue)
	Completed         int64 // kept because they carry a result
	DeadLetters       int64
	TotalProcessed    int64 // shard_metadata.total_jobs_processed
	TotalFailed       int64 // shard_metadata.total_jobs_failed
	OldestPending     time.Time
	AvgProcessingTime time.Duration // mean age of running claims
	Healthy           bool
	LastError         string
}

// SumShards adds up the counts and lifetime totals of ss, the one place
// shard figures are summed: Shard is -1, Healthy is whether every shard is,
// LastError the first unhealthy shard's, OldestPending the earliest, and
// AvgProcessingTime the mean over the shards' running claims.
func SumShards(ss []ShardStats) ShardStats {
	sum := ShardStats{Shard: -1, Healthy: true}
	var running time.Duration
	for _, s := range ss {
		sum.Pending += s.Pending
		sum.Scheduled += s.Scheduled
		sum.Processing += s.Processing
		sum.Failed += s.Failed
		sum.Completed += s.Completed
		sum.DeadLetters += s.DeadLetters
		sum.TotalProcessed += s.TotalProcessed
		sum.TotalFailed += s.TotalFailed
		if !s.OldestPending.IsZero() && (sum.OldestPending.IsZero() || s.OldestPending.Before(sum.OldestPending)) {
			sum.OldestPending = s.OldestPending
		}
		running += s.AvgProcessingTime * time.Duration(s.Processing)
		if !s.Healthy && sum.Healthy {
			sum.Healthy, sum.LastError = false, s.LastError
		}
	}
	if sum.Processing > 0 {
		sum.AvgProcessingTime = running / time.Duration(sum.Processing)
	}
	return sum
}

// JobCount is one row of Client.JobCounts: how many jobs of one task have
// one status in one shard, or, when Status is "" (see IsDeadLetters), how
// many dead-letter rows of one task one shard holds. Jobs and dead letters
// stored without a task have Task "".
type JobCount struct {
	Shard  int
	Task   string
	Status Status // "" for the dead-letter count
	Count  int64
}

// IsDeadLetters reports whether c counts dead-letter rows rather than jobs
// of one status.
func (c JobCount) IsDeadLetters() bool { return c.Status == "" }

// RecoverResult counts what orphan recovery did: jobs returned to pending
// and jobs moved to the dead-letter queue because their last attempt was
// used.
type RecoverResult struct {
	Requeued     int
	DeadLettered int
}

// CleanupResult counts what Cleanup deleted: finished jobs and dead-letter
// rows.
type CleanupResult struct {
	Jobs        int
	DeadLetters int
	// Workflows counts the finished workflows deleted (their steps'
	// jobs still stored are counted in Jobs).
	Workflows int
}
