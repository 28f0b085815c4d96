package store

// JobCount is one row of Store.JobCounts: how many jobs of one task have
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

// TaskBacklog counts one task's waiting jobs (Store.TaskBacklog).
type TaskBacklog struct {
	Pending   int64
	Scheduled int64
}
