package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// eachShard runs fn on each shard of list in a write transaction and sums
// the counts. It stops at the first error.
func (s *Store) eachShard(ctx context.Context, shard int, fn func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB) (int, error)) (int, error) {
	list, err := s.shardList(shard)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, sh := range list {
		var n int
		err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
			var err error
			n, err = fn(ctx, tx, counts, sh)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("shard %d: %w", sh.idx, err)
		}
		total += n
	}
	return total, nil
}

func affected(res sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// RecoverOrphans takes back jobs whose worker stopped heartbeating; see
// store.Store. It also settles multi-shard batches left staged by a dead
// producer (see batch.go). A job that has used every attempt is dead-lettered instead of
// being offered again, so a job that crashes its worker cannot loop forever.
func (s *Store) RecoverOrphans(ctx context.Context, stuckBefore, now time.Time) (store.RecoverResult, error) {
	var res store.RecoverResult
	cut, ts := store.FormatTime(stuckBefore), store.FormatTime(now)
	_, err := s.eachShard(ctx, store.AllShards, func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB) (int, error) {
		const stuck = `status = 'processing' AND (heartbeat IS NULL OR heartbeat < ?1)`
		spent := store.AttemptsSpentSQL(jobCols[colAttempts].name, jobCols[colMaxAttempts].name)
		if err := repairWorkflows(ctx, tx); err != nil { // workflow.go
			return 0, err
		}
		// A job asked to cancel ends cancelled rather than running again.
		if _, err := tx.ExecContext(ctx, `UPDATE fila SET status = 'cancelled', completed_at = ?2, worker_id = NULL,
			heartbeat = NULL, lease = NULL, last_error = 'cancelled: worker lost after a cancel request',
			error_type = 'Cancelled' WHERE `+stuck+` AND cancel_requested = 1`, cut, ts); err != nil {
			return 0, err
		}
		dead, err := affected(tx.ExecContext(ctx, `INSERT INTO dead_letter_queue
			(original_job_id, payload, error, error_type, failed_at, shard_id, task, attempts, error_stack, metadata)
			SELECT id, payload, 'worker lost: heartbeat older than stuck timeout on last attempt', 'OrphanRecovery',
				?2, ?3, task, tentativas, error_stack, metadata FROM fila WHERE `+stuck+` AND `+spent,
			cut, ts, sh.idx))
		if err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE fila SET status = 'failed', completed_at = ?2, worker_id = NULL,
			heartbeat = NULL, lease = NULL, last_error = 'worker lost: heartbeat older than stuck timeout on last attempt',
			error_type = 'OrphanRecovery' WHERE `+stuck+` AND `+spent, cut, ts); err != nil {
			return 0, err
		}
		counts.failed += dead
		requeued, err := affected(tx.ExecContext(ctx, `UPDATE fila SET status = 'pending', worker_id = NULL,
			heartbeat = NULL, lease = NULL, next_retry_at = ?2, last_error = 'Recovered orphan',
			error_type = 'OrphanRecovery' WHERE `+stuck, cut, ts))
		if err != nil {
			return 0, err
		}
		res.Requeued += requeued
		res.DeadLettered += dead
		return 0, nil
	})
	if err != nil {
		return res, err
	}
	_, _, err = s.finishBatches(ctx)
	return res, err
}

// sqlFreshRun is what a job's row forgets when it goes back to run afresh
// (RetryFailed, RetryJob, RequeueDead, a workflow's reopened step): its
// attempts, its last run and its last error.
const sqlFreshRun = `tentativas = 0, worker_id = NULL, heartbeat = NULL, lease = NULL, last_error = NULL,
	error_type = NULL, error_stack = NULL, completed_at = NULL`

// sqlRequeue puts failed jobs back to pending at ?2, with their unique key
// when they can keep it (sqlYieldKey, ?1).
const sqlRequeue = `UPDATE fila SET ` + sqlYieldKey + `, status = 'pending', next_retry_at = ?2, ` + sqlFreshRun

// RetryFailed re-queues failed jobs; see store.Store. Unlike queue-max it
// resets the attempt budget and removes the jobs' dead-letter rows, so a
// retried job gets its full retries and is never dead-lettered twice.
func (s *Store) RetryFailed(ctx context.Context, shard int, now time.Time) (int, error) {
	ts := store.FormatTime(now)
	return s.eachShard(ctx, shard, func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB) (int, error) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE original_job_id IN
			(SELECT id FROM fila WHERE `+sqlFinished+` AND status = 'failed')`); err != nil {
			return 0, err
		}
		return affected(tx.ExecContext(ctx, sqlRequeue+` WHERE `+sqlFinished+` AND status = 'failed'`, 1, ts))
	})
}

// RetryJob re-queues one failed job; see store.Store.
func (s *Store) RetryJob(ctx context.Context, id store.JobID, now time.Time) error {
	sh, err := s.shard(id.Shard())
	if err != nil {
		return err
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
		n, err := affected(tx.ExecContext(ctx, sqlRequeue+` WHERE id = ?3 AND status = 'failed'`, 0, store.FormatTime(now), id.Seq()))
		if err != nil {
			return err
		}
		if n == 0 {
			return asItem(fmt.Errorf("%w: no failed job %d", store.ErrJobNotFound, id))
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE original_job_id = ?`, id.Seq())
		return err
	})
}

// RequeueDead re-queues the job behind a dead-letter row; see store.Store.
func (s *Store) RequeueDead(ctx context.Context, shard int, dlqID int64, p store.RequeueParams) (store.JobID, error) {
	sh, err := s.shard(shard)
	if err != nil {
		return 0, err
	}
	var id store.JobID
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
		var orig sql.NullInt64
		var payload string
		var task, meta sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT original_job_id, payload, task, metadata FROM dead_letter_queue WHERE id = ?`, dlqID).
			Scan(&orig, &payload, &task, &meta)
		if errors.Is(err, sql.ErrNoRows) {
			return asItem(fmt.Errorf("%w: no dead letter %d in shard %d", store.ErrJobNotFound, dlqID, shard))
		}
		if err != nil {
			return err
		}
		ts := store.FormatTime(p.Now)
		n := 0
		if orig.Valid {
			n, err = affected(tx.ExecContext(ctx, sqlRequeue+`, progress = CASE WHEN ?4 THEN NULL ELSE progress END
				WHERE id = ?3 AND status = 'failed'`, 0, ts, orig.Int64, p.ClearProgress))
			if err != nil {
				return err
			}
			id = store.NewJobID(sh.idx, orig.Int64)
		}
		if n == 0 {
			// The queue row is gone (cleaned up): re-create the job.
			prio, maxAttempts := p.DefaultsOf(task.String)
			id, err = insertJob(ctx, tx, counts.stmt(ctx, tx, sh.stmts.insert), sh, &store.InsertParams{
				Task: task.String, Payload: []byte(payload), Priority: prio, MaxAttempts: maxAttempts, Now: p.Now,
				Metadata: metadataOf(meta)}, "")
			if err != nil {
				return err
			}
		}
		if orig.Valid {
			_, err = tx.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE id = ? OR original_job_id = ?`, dlqID, orig.Int64)
		} else {
			_, err = tx.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE id = ?`, dlqID)
		}
		return err
	})
	return id, err
}

// Cleanup deletes old finished jobs and dead letters; see store.Store. It
// compares with julianday so that both timestamp formats found in
// queue-max files compare correctly, and it deletes failed jobs by when
// they failed, not when they were created.
func (s *Store) Cleanup(ctx context.Context, cutoff time.Time) (store.CleanupResult, error) {
	return s.Prune(ctx, store.PruneParams{CompletedBefore: cutoff, FinishedBefore: cutoff})
}

// Prune deletes completed jobs, and failed and cancelled ones with dead
// letters, each before its own cutoff; see store.Store.
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (store.CleanupResult, error) {
	var res store.CleanupResult
	// Finished workflows first, with their steps' jobs (workflow.go).
	w, j, err := s.pruneAllWorkflows(ctx, p)
	res.Workflows, res.Jobs = w, j
	if err != nil {
		return res, err
	}
	if !p.CompletedBefore.IsZero() {
		list, err := s.shardList(store.AllShards)
		if err != nil {
			return res, err
		}
		cut, results := store.FormatTime(p.CompletedBefore), store.FormatTime(p.CompletedBefore)
		if !p.KeepResultsAfter.IsZero() && p.KeepResultsAfter.Before(p.CompletedBefore) {
			results = store.FormatTime(p.KeepResultsAfter)
		}
		for _, sh := range list {
			// Retention can keep many completed rows: they go in batches,
			// each its own short write transaction, so that claims and
			// acknowledgements are not held up behind one long delete.
			for {
				var n int
				err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
					var err error
					n, err = affected(tx.ExecContext(ctx, sqlPruneCompleted, cut, pruneBatch, results))
					return err
				})
				if err != nil {
					return res, fmt.Errorf("shard %d: %w", sh.idx, err)
				}
				res.Jobs += n
				if n < pruneBatch {
					break
				}
			}
		}
	}
	if p.FinishedBefore.IsZero() {
		return res, nil
	}
	cut := store.FormatTime(p.FinishedBefore)
	_, err = s.eachShard(ctx, store.AllShards, func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB) (int, error) {
		n, err := affected(tx.ExecContext(ctx, sqlPruneFinished, cut))
		if err != nil {
			return 0, err
		}
		d, err := affected(tx.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE julianday(failed_at) < julianday(?)`, cut))
		if err != nil {
			return 0, err
		}
		res.Jobs += n
		res.DeadLetters += d
		return 0, nil
	})
	return res, err
}

// sqlPruneFinished deletes the failed and cancelled jobs that finished
// before ?1, through idx_qm_done.
const sqlPruneFinished = `DELETE FROM fila WHERE ` + sqlFinished + ` AND status IN ('failed', 'cancelled')
	AND julianday(coalesce(completed_at, created_at)) < julianday(?)`

// sqlHasWork asks whether a job is pending, scheduled or processing, one
// partial index per status (two for pending: one per claim index).
const sqlHasWork = `SELECT EXISTS (SELECT 1 FROM fila WHERE ` + sqlReadyDefault + `)
	OR EXISTS (SELECT 1 FROM fila WHERE ` + sqlReadyNamed + `)
	OR EXISTS (SELECT 1 FROM fila WHERE status = 'scheduled') OR EXISTS (SELECT 1 FROM fila WHERE status = 'processing')`

// pruneBatch is how many completed rows one transaction of Prune deletes.
const pruneBatch = 2000

// sqlPruneCompleted deletes up to ?2 completed rows finished before ?1
// (those with a result only if also before ?3).
// Every completed row is ours, with completed_at in TimeLayout, so it is
// compared as text and idx_qm_done serves it (sqlFinished, its predicate
// repeated, is what lets SQLite use that partial index).
const sqlPruneCompleted = `DELETE FROM fila WHERE id IN (SELECT id FROM fila
	WHERE ` + sqlFinished + ` AND status = 'completed' AND completed_at < ?1
		AND (result IS NULL OR completed_at < ?3) LIMIT ?2)`

// Purge deletes jobs by status; see store.Store.
func (s *Store) Purge(ctx context.Context, statuses []store.Status) (int, error) {
	q := `DELETE FROM fila WHERE status <> 'processing'`
	var args []any
	if len(statuses) > 0 {
		ph := make([]string, len(statuses))
		for i, st := range statuses {
			ph[i] = "?"
			args = append(args, string(st))
		}
		q = `DELETE FROM fila WHERE status IN (` + strings.Join(ph, ", ") + `)`
	}
	return s.eachShard(ctx, store.AllShards, func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB) (int, error) {
		return affected(tx.ExecContext(ctx, q, args...))
	})
}

// Job returns one job; see store.Store.
func (s *Store) Job(ctx context.Context, id store.JobID) (*store.Job, error) {
	sh, err := s.shard(id.Shard())
	if err != nil {
		return nil, err
	}
	j, err := scanJob(sh.r.QueryRowContext(ctx, `SELECT `+sh.cols+` FROM fila WHERE id = ?`, id.Seq()), sh.idx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", store.ErrJobNotFound, id)
	}
	return j, err
}

// Jobs lists jobs, newest first across shards; see store.Store. The limit
// applies to the merged result, not per shard.
func (s *Store) Jobs(ctx context.Context, p store.ListParams) ([]*store.Job, error) {
	list, err := s.shardList(p.Shard)
	if err != nil {
		return nil, err
	}
	limit := p.MaxRows()
	var out []*store.Job
	for _, sh := range list {
		q := `SELECT ` + sh.cols + ` FROM fila WHERE ` + notStaged
		var args []any
		if set := p.StatusSet(); len(set) > 0 {
			q += ` AND status IN (?` + strings.Repeat(`,?`, len(set)-1) + `)`
			for _, st := range set {
				args = append(args, string(st))
			}
		}
		if p.Task != "" {
			q += ` AND ` + sh.taskCol + ` = ?`
			args = append(args, p.Task)
		}
		if p.Tag != "" {
			if !sh.hasTags {
				continue // a file from before tags: no job has one
			}
			// The primary key of qm_job_tags, not a scan of fila.
			q += ` AND id IN (SELECT job_id FROM qm_job_tags WHERE tag = ?)`
			args = append(args, p.Tag)
		}
		q += ` ORDER BY id DESC LIMIT ?`
		args = append(args, limit)
		rows, err := sh.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("shard %d: list jobs: %w", sh.idx, err)
		}
		for rows.Next() {
			j, err := scanJob(rows, sh.idx)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, j)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	// Newest first across shards by creation time, then ID.
	slices.SortStableFunc(out, func(a, b *store.Job) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DeadLetters lists dead-letter rows, newest first; see store.Store.
func (s *Store) DeadLetters(ctx context.Context, p store.ListParams) ([]*store.DeadLetter, error) {
	list, err := s.shardList(p.Shard)
	if err != nil {
		return nil, err
	}
	limit := p.MaxRows()
	var out []*store.DeadLetter
	for _, sh := range list {
		q := `SELECT ` + sh.dlqCols + ` FROM dead_letter_queue`
		var args []any
		if p.Task != "" {
			q += ` WHERE ` + sh.dlqTaskCol + ` = ?`
			args = append(args, p.Task)
		}
		q += ` ORDER BY id DESC LIMIT ?`
		args = append(args, limit)
		rows, err := sh.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("shard %d: list dead letters: %w", sh.idx, err)
		}
		for rows.Next() {
			var d store.DeadLetter
			var orig, attempts sql.NullInt64
			var task sql.NullString
			var payload, failedAt string
			if err := rows.Scan(&d.ID, &orig, &task, &payload, &d.Error, &d.ErrorType, &attempts, &failedAt); err != nil {
				rows.Close()
				return nil, err
			}
			d.Shard = sh.idx
			if orig.Valid {
				d.OriginalJobID = store.NewJobID(sh.idx, orig.Int64)
			}
			d.Task = task.String
			d.Payload = []byte(payload)
			d.Attempts = int(attempts.Int64)
			d.FailedAt = store.ParseTime(failedAt)
			out = append(out, &d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b *store.DeadLetter) int { return b.FailedAt.Compare(a.FailedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Stats returns per-shard counts; see store.Store. A shard that cannot be
// read is reported with Healthy false and its error, not as zeros.
func (s *Store) Stats(ctx context.Context) ([]store.ShardStats, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	out := make([]store.ShardStats, len(s.shards))
	now := time.Now()
	for i, sh := range s.shards {
		st := store.ShardStats{Shard: i, Healthy: true}
		if err := shardStats(ctx, sh, &st, now); err != nil {
			st = store.ShardStats{Shard: i, LastError: err.Error()}
		}
		out[i] = st
	}
	return out, nil
}

// sqlWaitingCounts and sqlFinishedCounts count a shard's rows by status,
// each term on its partial index (idx_qm_ready and idx_qm_claim_queue,
// idx_qm_due, idx_heartbeat, idx_qm_done): the literal predicates are what
// let SQLite use them.
const (
	sqlWaitingCounts = `SELECT (SELECT count(*) FROM fila WHERE ` + sqlReadyDefault + `)
			+ (SELECT count(*) FROM fila WHERE ` + sqlReadyNamed + `),
		(SELECT count(*) FROM fila WHERE ` + settledScheduled + `),
		(SELECT count(*) FROM fila WHERE status = 'processing')`
	sqlFinishedCounts = `SELECT status, count(*) FROM fila WHERE ` + sqlFinished + ` GROUP BY status`
	// sqlFinished is idx_qm_done's predicate: a query that repeats it
	// (with its own status test) can read that index.
	sqlFinished = `status IN ('failed', 'completed', 'cancelled')`
)

// forFile adapts a statement that counts pending rows on their claim
// indexes to sh: a queue-max file opened read-only before our migrations
// has no queue column, and its pending rows are read by status alone.
func (sh *shardDB) forFile(q string) string {
	if !sh.noQueue {
		return q
	}
	q = strings.ReplaceAll(q, sqlReadyDefault, `status = 'pending'`)
	return strings.ReplaceAll(q, sqlReadyNamed, `0`)
}

// sqlPendingHeads is the first pending job in claim order of each queue
// (perQueueSQL): the shard's head is the first of them. It names no index:
// a read-only store may read a file from before idx_qm_ready.
var sqlPendingHeads = strings.Replace(perQueueSQL("", "1", "1"), fromReady, "fila", 1)

func shardStats(ctx context.Context, sh *shardDB, st *store.ShardStats, now time.Time) error {
	// One partial index per kind of status (sqlStatusCounts): the counts
	// never read the table, however many finished rows are kept.
	var pending, scheduled, processing int64
	if err := sh.r.QueryRowContext(ctx, sh.forFile(sqlWaitingCounts)).Scan(&pending, &scheduled, &processing); err != nil {
		return err
	}
	store.SetCount(st, store.StatusPending, pending)
	store.SetCount(st, store.StatusScheduled, scheduled)
	store.SetCount(st, store.StatusProcessing, processing)
	rows, err := sh.r.QueryContext(ctx, sqlFinishedCounts)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return err
		}
		store.SetCount(st, store.Status(status), n)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// queue-max keeps a job waiting for its retry time pending with a
	// future next_retry_at (also when it writes after our migration): that
	// job is not ready, so it counts as scheduled.
	var later int64
	if st.Pending > 0 {
		if err := sh.r.QueryRowContext(ctx, `SELECT count(*) FROM fila WHERE status = 'pending'
			AND next_retry_at IS NOT NULL AND next_retry_at > ?`, store.FormatTime(now)).Scan(&later); err != nil {
			return err
		}
	}
	st.Pending -= later
	st.Scheduled += later
	var oldest, avgStart sql.NullString
	heads := sqlPendingHeads
	if sh.noQueue {
		heads = `SELECT id, priority FROM fila WHERE status = 'pending'`
	}
	if err := sh.r.QueryRowContext(ctx, `SELECT
		(SELECT created_at FROM fila WHERE id = (SELECT id FROM (`+heads+`) ORDER BY priority DESC, id LIMIT 1)),
		(SELECT avg(julianday(started_at)) FROM fila WHERE status = 'processing'),
		(SELECT count(*) FROM dead_letter_queue),
		coalesce((SELECT total_jobs_processed FROM shard_metadata WHERE shard_id = ?), 0),
		coalesce((SELECT total_jobs_failed FROM shard_metadata WHERE shard_id = ?), 0)`, sh.idx, sh.idx).
		Scan(&oldest, &avgStart, &st.DeadLetters, &st.TotalProcessed, &st.TotalFailed); err != nil {
		return err
	}
	st.OldestPending = store.ParseTime(oldest.String)
	if avgStart.Valid {
		var jd float64
		fmt.Sscan(avgStart.String, &jd)
		started := time.UnixMilli(int64((jd - 2440587.5) * 86400000))
		st.AvgProcessingTime = max(0, now.Sub(started))
	}
	return nil
}

// TaskCounts counts one task's jobs by status; see store.Store. There is no
// index on task (it would slow every insert), so this scans each shard.
func (s *Store) TaskCounts(ctx context.Context, task string) (map[store.Status]int64, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	out := make(map[store.Status]int64)
	for _, sh := range s.shards {
		rows, err := sh.r.QueryContext(ctx, `SELECT status, count(*) FROM fila WHERE `+sh.taskCol+` = ? AND `+notStaged+` GROUP BY status`, task)
		if err != nil {
			return nil, fmt.Errorf("shard %d: task counts: %w", sh.idx, err)
		}
		for rows.Next() {
			var st string
			var n int64
			if err := rows.Scan(&st, &n); err != nil {
				rows.Close()
				return nil, err
			}
			out[store.Status(st)] += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// HasWork reports whether any job is pending, scheduled or processing.
func (s *Store) HasWork(ctx context.Context) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	for _, sh := range s.shards {
		var has bool
		if err := sh.r.QueryRowContext(ctx, sh.forFile(sqlHasWork)).Scan(&has); err != nil {
			return false, fmt.Errorf("shard %d: %w", sh.idx, err)
		}
		if has {
			return true, nil
		}
	}
	return false, nil
}

// NextDue returns the earliest scheduled time; see store.Store.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	if s.closed.Load() {
		return time.Time{}, false, store.ErrClosed
	}
	var best time.Time
	for _, sh := range s.shards {
		var next sql.NullString
		if err := sh.r.QueryRowContext(ctx, `SELECT min(next_retry_at) FROM fila WHERE status = 'scheduled' AND next_retry_at < '`+stagedNext+`'`).Scan(&next); err != nil {
			return time.Time{}, false, fmt.Errorf("shard %d: %w", sh.idx, err)
		}
		if t := store.ParseTime(next.String); !t.IsZero() && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	return best, !best.IsZero(), nil
}

// DataVersion returns a fingerprint of the sizes and modification times of
// the shards' WAL files. Every commit, from any connection of any process,
// writes to its shard's WAL, so the fingerprint changes; reading it costs
// one stat call per shard and no SQL, which lets
// idle workers check for other processes' enqueues every few milliseconds
// for a fraction of a percent of a core. (PRAGMA data_version says the same
// through a query per shard, about 30 times as expensive.)
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	var h int64
	for _, sh := range s.shards {
		fi, err := os.Stat(sh.path + "-wal")
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("shard %d: %w", sh.idx, err)
		}
		h = h*1_000_003 + fi.Size()
		h = h*1_000_003 + fi.ModTime().UnixNano()
	}
	return h, nil
}
