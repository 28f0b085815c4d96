package pgstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/runtime/store"
)

// copyMin is the smallest batch Insert writes with COPY: below it the
// extra round trip that takes the batch's ids costs more than COPY saves.
const copyMin = 32

// copyable reports whether every job of a batch can be written by COPY:
// none is unique (each of those decides with its own statement, see
// unique.go) and none waits for a run-at time (the database clock's
// now() plus the job's delay is an expression, which COPY cannot
// evaluate). Tags, metadata, partition keys, queues and timeouts are
// plain values and do not stop it. A batch that is not copyable is one
// INSERT … SELECT unnest statement, as before.
func copyable(jobs []store.InsertParams) bool {
	if len(jobs) < copyMin {
		return false
	}
	for _, j := range jobs {
		if j.Unique != nil {
			return false
		}
		if !j.RunAt.IsZero() {
			now := j.Now
			if now.IsZero() {
				now = hostNow()
			}
			if j.RunAt.After(now) {
				return false
			}
		}
	}
	return true
}

// copyColumns are the columns COPY fills; status is left to its default
// (pending), created_at to its default, the database's now(), unless the
// store follows the callers' clocks (copyColumnsHost).
var (
	copyColumns = []string{"id", "shard", "partition_key", "task", "payload", "priority", "max_attempts",
		"retry_delay", "metadata", "timeout_ms", "tags", "queue"}
	copyColumnsHost = append(slices.Clip(copyColumns), "created_at")
)

// insertCopy writes a copyable batch with COPY, on one connection: first
// one statement takes the batch's ids from the jobs sequence (in
// ascending order, given to the jobs in input order, as insertWith's
// single statement does), then COPY writes the rows with those ids. COPY
// is one statement: the batch is stored all or nothing, and the
// statement-level insert trigger notifies once.
func (s *Store) insertCopy(ctx context.Context, jobs []store.InsertParams) ([]store.JobID, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("queuemax: insert jobs: %w", &notSent{err})
	}
	defer conn.Release()
	var seqs []int64
	if err := conn.QueryRow(ctx, s.q.nextIDs, len(jobs)).Scan(&seqs); err != nil {
		return nil, fmt.Errorf("queuemax: insert jobs: take ids: %w", &notSent{err})
	}
	if len(seqs) != len(jobs) {
		return nil, fmt.Errorf("queuemax: insert jobs: %d ids taken for %d jobs", len(seqs), len(jobs))
	}
	slices.Sort(seqs)
	cols := copyColumns
	if s.host {
		cols = copyColumnsHost
	}
	row := make([]any, len(cols))
	src := pgx.CopyFromSlice(len(jobs), func(i int) ([]any, error) {
		j := &jobs[i]
		var pkey, meta, tmo, tags any
		if j.PartitionKey != nil {
			pkey = *j.PartitionKey
		}
		if len(j.Metadata) > 0 {
			meta = []byte(j.Metadata)
		}
		if j.Timeout > 0 {
			tmo = max(1, j.Timeout.Milliseconds())
		}
		if len(j.Tags) > 0 {
			tags = j.Tags
		}
		var task any
		if j.Task != "" {
			task = j.Task
		}
		row[0], row[1], row[2], row[3], row[4] = seqs[i], int32(j.Shard), pkey, task, []byte(j.Payload)
		row[5], row[6], row[7] = int16(j.Priority), int32(j.MaxAttempts), retryMillis(j.RetryDelay)
		row[8], row[9], row[10], row[11] = meta, tmo, tags, store.QueueOf(j.Queue)
		if s.host {
			now := j.Now
			if now.IsZero() {
				now = hostNow()
			}
			row[12] = now
		}
		return row, nil
	})
	n, err := conn.CopyFrom(ctx, pgx.Identifier{s.schema, "jobs"}, cols, src)
	if err != nil {
		return nil, fmt.Errorf("queuemax: insert jobs (COPY): %w", err)
	}
	if int(n) != len(jobs) {
		return nil, fmt.Errorf("queuemax: insert jobs (COPY): %d rows written for %d jobs", n, len(jobs))
	}
	out := make([]store.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = store.NewJobID(j.Shard, seqs[i])
	}
	return out, nil
}
