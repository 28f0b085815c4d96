package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// exec runs q (with {s} and @now expanded) and returns the rows affected.
func (s *Store) exec(ctx context.Context, q string, args ...any) (int, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, expand(q, pgx.Identifier{s.schema}.Sanitize(), s.host), args...)
	return int(tag.RowsAffected()), err
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) pgx.Row {
	return s.pool.QueryRow(ctx, expand(q, pgx.Identifier{s.schema}.Sanitize(), s.host), args...)
}

func (s *Store) query(ctx context.Context, q string, args ...any) (pgx.Rows, error) {
	return s.pool.Query(ctx, expand(q, pgx.Identifier{s.schema}.Sanitize(), s.host), args...)
}

// RecoverOrphans takes back jobs whose worker stopped heartbeating, in one
// statement; see store.Store. Staleness is judged with the database's
// clock: a heartbeat is stale when older than now() - (now - stuckBefore).
// A job that has used every attempt is dead-lettered instead.
func (s *Store) RecoverOrphans(ctx context.Context, stuckBefore, now time.Time) (store.RecoverResult, error) {
	if err := s.writable(); err != nil {
		return store.RecoverResult{}, err
	}
	var res store.RecoverResult
	if s.closed.Load() {
		return res, store.ErrClosed
	}
	spent := store.AttemptsSpentSQL("j.attempts", "j.max_attempts")
	err := s.queryRow(ctx, `WITH st AS (SELECT id, cancel_requested FROM {s}.jobs WHERE status = 'processing'
			AND (heartbeat IS NULL OR heartbeat < @now + $2`+us+`) FOR UPDATE SKIP LOCKED),
		cx AS (UPDATE {s}.jobs j SET status = 'cancelled', completed_at = @now, worker_id = NULL, heartbeat = NULL, lease = NULL,
				last_error = 'cancelled: worker lost after a cancel request', error_type = 'Cancelled'
			FROM st WHERE j.id = st.id AND st.cancel_requested),
		dead AS (UPDATE {s}.jobs j SET status = 'failed', completed_at = @now, worker_id = NULL, heartbeat = NULL, lease = NULL,
				last_error = '`+orphanMsg+`', error_type = 'OrphanRecovery'
			FROM st WHERE j.id = st.id AND NOT st.cancel_requested AND `+spent+`
			RETURNING j.id, j.shard, j.payload, j.task, j.attempts, j.error_stack, j.metadata),
		dl AS (INSERT INTO {s}.dead_letters (shard, original_job_id, payload, error, error_type, error_stack, task, attempts, failed_at, metadata)
			SELECT shard, id, payload, '`+orphanMsg+`', 'OrphanRecovery', error_stack, task, attempts, @now, metadata FROM dead),
		c AS (INSERT INTO {s}.counters AS c (shard, slot, failed) SELECT shard, $3, count(*) FROM dead GROUP BY shard
			ON CONFLICT (shard, slot) DO UPDATE SET failed = c.failed + excluded.failed),
		req AS (UPDATE {s}.jobs j SET status = 'pending', worker_id = NULL, heartbeat = NULL, lease = NULL, next_retry_at = @now,
				last_error = 'Recovered orphan', error_type = 'OrphanRecovery'
			FROM st WHERE j.id = st.id AND NOT st.cancel_requested AND NOT `+spent+` RETURNING j.id)
		SELECT (SELECT count(*) FROM req), (SELECT count(*) FROM dead)`,
		now, offset(stuckBefore, now), counterSlot()).Scan(&res.Requeued, &res.DeadLettered)
	if err != nil {
		return store.RecoverResult{}, fmt.Errorf("queuemax: recover orphans: %w", err)
	}
	if res.Requeued > 0 {
		s.wake(ctx)
	}
	return res, nil
}

const orphanMsg = "worker lost: heartbeat older than stuck timeout on last attempt"

const resetJob = `status = 'pending', attempts = 0, next_retry_at = @now, worker_id = NULL, heartbeat = NULL,
	lease = NULL, last_error = NULL, error_type = NULL, error_stack = NULL, completed_at = NULL, ` + yieldKey

// yieldKey is the unique_key of a failed job going back to pending: it
// drops its key, running as a plain job, when another job holds the key
// now, or when a failed job of the same key with a smaller id goes back
// by the same statement (only RetryFailed's, whose $2 is a shard or -1)
// and keeps it. Without this, the move would violate jobs_unique. The
// subqueries see the statement's snapshot, before any row moved.
const yieldKey = `unique_key = CASE WHEN unique_key IS NOT NULL AND (
		EXISTS (SELECT 1 FROM {s}.jobs o WHERE o.unique_key = jobs.unique_key AND o.id <> jobs.id
			AND o.unique_key IS NOT NULL AND o.status = ANY (o.unique_states))
		OR (@many AND EXISTS (SELECT 1 FROM {s}.jobs o WHERE o.unique_key = jobs.unique_key AND o.id < jobs.id
			AND o.status = 'failed')))
	THEN NULL ELSE unique_key END`

// RetryFailed re-queues failed jobs with a fresh attempt budget and removes
// their dead-letter rows; see store.Store.
func (s *Store) RetryFailed(ctx context.Context, shard int, now time.Time) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if shard != store.AllShards {
		if err := s.checkShard(shard); err != nil {
			return 0, err
		}
	}
	var n int
	err := s.queryRow(ctx, `WITH r AS (UPDATE {s}.jobs SET `+strings.ReplaceAll(resetJob, "@many", "true")+`
			WHERE status = 'failed' AND ($2 < 0 OR shard = $2) RETURNING id),
		d AS (DELETE FROM {s}.dead_letters WHERE original_job_id IN (SELECT id FROM r))
		SELECT count(*) FROM r`, now, int32(shard)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("queuemax: retry failed jobs: %w", err)
	}
	if n > 0 {
		s.wake(ctx)
	}
	return n, nil
}

// RetryJob re-queues one failed job; see store.Store.
func (s *Store) RetryJob(ctx context.Context, id store.JobID, now time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	var n int
	err := s.queryRow(ctx, `WITH r AS (UPDATE {s}.jobs SET `+strings.ReplaceAll(resetJob, "@many", "false")+`
			WHERE id = $2 AND shard = $3 AND status = 'failed' RETURNING id),
		d AS (DELETE FROM {s}.dead_letters WHERE original_job_id IN (SELECT id FROM r))
		SELECT count(*) FROM r`, now, id.Seq(), int32(id.Shard())).Scan(&n)
	if err != nil {
		return fmt.Errorf("queuemax: retry job %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no failed job %d", store.ErrJobNotFound, id)
	}
	s.wake(ctx)
	return nil
}

// RequeueDead re-queues the job behind a dead-letter row, re-creating it
// when its queue row is gone, in one transaction; see store.Store.
func (s *Store) RequeueDead(ctx context.Context, shard int, dlqID int64, p store.RequeueParams) (store.JobID, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if err := s.checkShard(shard); err != nil {
		return 0, err
	}
	schema := pgx.Identifier{s.schema}.Sanitize()
	var id store.JobID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var orig pgtype.Int8
		var task pgtype.Text
		var payload, meta []byte
		err := tx.QueryRow(ctx, expand(`SELECT original_job_id, task, payload, metadata FROM {s}.dead_letters
			WHERE id = $1 AND shard = $2 FOR UPDATE`, schema, s.host), dlqID, int32(shard)).Scan(&orig, &task, &payload, &meta)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no dead letter %d in shard %d", store.ErrJobNotFound, dlqID, shard)
		}
		if err != nil {
			return err
		}
		n := int64(0)
		if orig.Valid {
			tag, err := tx.Exec(ctx, expand(`UPDATE {s}.jobs SET `+strings.ReplaceAll(resetJob, "@many", "false")+`,
				progress = CASE WHEN $3 THEN NULL ELSE progress END WHERE id = $2 AND status = 'failed'`, schema, s.host),
				p.Now, orig.Int64, p.ClearProgress)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
			id = store.NewJobID(shard, orig.Int64)
		}
		if n == 0 {
			// The queue row is gone (cleaned up): re-create the job.
			prio, maxAttempts := p.DefaultsOf(task.String)
			ids, err := insertWith(ctx, pgxQuerier{tx}, s.q.insert, []store.InsertParams{{Shard: shard,
				Task: task.String, Payload: payload, Priority: prio, MaxAttempts: maxAttempts, Metadata: meta, Now: p.Now}})
			if err != nil {
				return err
			}
			id = ids[0]
		}
		_, err = tx.Exec(ctx, expand(`DELETE FROM {s}.dead_letters WHERE id = $1 OR (original_job_id = $2 AND shard = $3)`, schema, s.host),
			dlqID, orig, int32(shard))
		return err
	})
	if err != nil {
		return 0, err
	}
	s.wake(ctx)
	return id, nil
}

// Cleanup deletes failed, completed and cancelled jobs that finished before
// cutoff, and dead letters written before it; see store.Store.
func (s *Store) Cleanup(ctx context.Context, cutoff time.Time) (store.CleanupResult, error) {
	return s.Prune(ctx, store.PruneParams{CompletedBefore: cutoff, FinishedBefore: cutoff})
}

// Prune deletes completed jobs, and failed and cancelled ones with dead
// letters, each before its own cutoff; see store.Store. With the database
// clock, the cutoffs are taken as ages relative to the host's clock.
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (store.CleanupResult, error) {
	if err := s.writable(); err != nil {
		return store.CleanupResult{}, err
	}
	var res store.CleanupResult
	var err error
	if s.closed.Load() {
		return res, store.ErrClosed
	}
	now := hostNow()
	// Finished workflows first, with their steps' jobs (workflow.go).
	if res.Workflows, res.Jobs, err = s.pruneWorkflows(ctx, p, now); err != nil {
		return res, fmt.Errorf("queuemax: cleanup workflows: %w", err)
	}
	wfJobs := res.Jobs
	results := p.CompletedBefore
	if !p.KeepResultsAfter.IsZero() && p.KeepResultsAfter.Before(results) {
		results = p.KeepResultsAfter
	}
	// A zero cutoff deletes nothing of its kind ($3, $5 false).
	err = s.queryRow(ctx, `WITH c AS (DELETE FROM {s}.jobs WHERE $3 AND status = 'completed'
			AND completed_at < @now + $2`+us+` AND (result IS NULL OR completed_at < @now + $6`+us+`) RETURNING 1),
		j AS (DELETE FROM {s}.jobs WHERE $5 AND status IN ('failed', 'cancelled')
			AND coalesce(completed_at, created_at) < @now + $4`+us+` RETURNING 1),
		d AS (DELETE FROM {s}.dead_letters WHERE $5 AND failed_at < @now + $4`+us+` RETURNING 1)
		SELECT (SELECT count(*) FROM c) + (SELECT count(*) FROM j), (SELECT count(*) FROM d)`, now,
		offset(p.CompletedBefore, now), !p.CompletedBefore.IsZero(),
		offset(p.FinishedBefore, now), !p.FinishedBefore.IsZero(), offset(results, now)).Scan(&res.Jobs, &res.DeadLetters)
	if err != nil {
		return store.CleanupResult{}, fmt.Errorf("queuemax: cleanup: %w", err)
	}
	res.Jobs += wfJobs
	return res, nil
}

// Purge deletes jobs by status; see store.Store.
func (s *Store) Purge(ctx context.Context, statuses []store.Status) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if len(statuses) == 0 {
		return s.exec(ctx, `DELETE FROM {s}.jobs WHERE status <> 'processing'`)
	}
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = string(st)
	}
	return s.exec(ctx, `DELETE FROM {s}.jobs WHERE status = ANY($1::text[])`, names)
}

// Job returns one job; see store.Store.
func (s *Store) Job(ctx context.Context, id store.JobID) (*store.Job, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	j, err := scanJob(s.queryRow(ctx, `SELECT `+jobColumns+` FROM {s}.jobs WHERE id = $1 AND shard = $2`, id.Seq(), int32(id.Shard())))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", store.ErrJobNotFound, id)
	}
	return j, err
}

// Jobs lists jobs, newest first; see store.Store.
func (s *Store) Jobs(ctx context.Context, p store.ListParams) ([]*store.Job, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if p.Shard != store.AllShards {
		if err := s.checkShard(p.Shard); err != nil {
			return nil, err
		}
	}
	q := `SELECT ` + jobColumns + ` FROM {s}.jobs
		WHERE ($1 < 0 OR shard = $1) AND ($2 = '' OR status = $2) AND ($3 = '' OR task = $3)`
	one, set := "", p.StatusSet()
	if len(set) == 1 {
		one = string(set[0])
	}
	args := []any{int32(p.Shard), one, p.Task, p.MaxRows()}
	if len(set) > 1 {
		sts := make([]string, len(set))
		for i, st := range set {
			sts[i] = string(st)
		}
		q += ` AND status = ANY($` + strconv.Itoa(len(args)+1) + `::text[])`
		args = append(args, sts)
	}
	if p.Tag != "" {
		// Written out only when filtering, so that the plan can use the
		// GIN index jobs_tags.
		q += ` AND tags @> ARRAY[$` + strconv.Itoa(len(args)+1) + `::text]`
		args = append(args, p.Tag)
	}
	rows, err := s.query(ctx, q+` ORDER BY created_at DESC, id DESC LIMIT $4`, args...)
	if err != nil {
		return nil, fmt.Errorf("queuemax: list jobs: %w", err)
	}
	defer rows.Close()
	var out []*store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// DeadLetters lists dead-letter rows, newest first; see store.Store.
func (s *Store) DeadLetters(ctx context.Context, p store.ListParams) ([]*store.DeadLetter, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if p.Shard != store.AllShards {
		if err := s.checkShard(p.Shard); err != nil {
			return nil, err
		}
	}
	rows, err := s.query(ctx, `SELECT id, shard, original_job_id, task, payload, error, error_type, attempts, failed_at
		FROM {s}.dead_letters WHERE ($1 < 0 OR shard = $1) AND ($2 = '' OR task = $2)
		ORDER BY failed_at DESC, id DESC LIMIT $3`, int32(p.Shard), p.Task, p.MaxRows())
	if err != nil {
		return nil, fmt.Errorf("queuemax: list dead letters: %w", err)
	}
	defer rows.Close()
	var out []*store.DeadLetter
	for rows.Next() {
		var d store.DeadLetter
		var shard int32
		var orig, attempts pgtype.Int8
		var task pgtype.Text
		var failed pgtype.Timestamptz
		if err := rows.Scan(&d.ID, &shard, &orig, &task, &d.Payload, &d.Error, &d.ErrorType, &attempts, &failed); err != nil {
			return nil, err
		}
		d.Shard = int(shard)
		if orig.Valid {
			d.OriginalJobID = store.NewJobID(d.Shard, orig.Int64)
		}
		d.Task = task.String
		d.Attempts = int(attempts.Int64)
		d.FailedAt = toTime(failed)
		out = append(out, &d)
	}
	return out, rows.Err()
}

// Stats returns per-shard counts; see store.Store. If the database cannot
// be read, every shard is reported unhealthy with the error.
func (s *Store) Stats(ctx context.Context) ([]store.ShardStats, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	out := make([]store.ShardStats, s.shards)
	for i := range out {
		out[i] = store.ShardStats{Shard: i, Healthy: true}
	}
	if err := s.stats(ctx, out); err != nil {
		for i := range out {
			out[i] = store.ShardStats{Shard: i, LastError: err.Error()}
		}
	}
	return out, nil
}

func (s *Store) stats(ctx context.Context, out []store.ShardStats) error {
	get := func(sh int32) *store.ShardStats {
		if int(sh) < 0 || int(sh) >= len(out) {
			return &store.ShardStats{}
		}
		return &out[sh]
	}
	b := &pgx.Batch{}
	schema := pgx.Identifier{s.schema}.Sanitize()
	b.Queue(expand(`SELECT shard, status, count(*) FROM {s}.jobs GROUP BY shard, status`, schema, s.host)).Query(func(rows pgx.Rows) error {
		var sh int32
		var status string
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&sh, &status, &n}, func() error {
			st := get(sh)
			store.SetCount(st, store.Status(status), n)
			return nil
		})
		return err
	})
	b.Queue(expand(`SELECT shard, count(*) FROM {s}.dead_letters GROUP BY shard`, schema, s.host)).Query(func(rows pgx.Rows) error {
		var sh int32
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&sh, &n}, func() error { get(sh).DeadLetters = n; return nil })
		return err
	})
	b.Queue(expand(`SELECT shard, sum(processed)::bigint, sum(failed)::bigint FROM {s}.counters GROUP BY shard`, schema, s.host)).Query(func(rows pgx.Rows) error {
		var sh int32
		var p, f int64
		_, err := pgx.ForEachRow(rows, []any{&sh, &p, &f}, func() error {
			get(sh).TotalProcessed, get(sh).TotalFailed = p, f
			return nil
		})
		return err
	})
	b.Queue(expand(`SELECT DISTINCT ON (shard) shard, created_at FROM {s}.jobs WHERE status = 'pending'
		ORDER BY shard, priority DESC, id`, schema, s.host)).Query(func(rows pgx.Rows) error {
		var sh int32
		var t time.Time
		_, err := pgx.ForEachRow(rows, []any{&sh, &t}, func() error { get(sh).OldestPending = t.UTC(); return nil })
		return err
	})
	b.Queue(expand(`SELECT shard, (avg(extract(epoch FROM now() - started_at)) * 1000000)::bigint FROM {s}.jobs
		WHERE status = 'processing' AND started_at IS NOT NULL GROUP BY shard`, schema, s.host)).Query(func(rows pgx.Rows) error {
		var sh int32
		var micros int64
		_, err := pgx.ForEachRow(rows, []any{&sh, &micros}, func() error {
			get(sh).AvgProcessingTime = max(0, time.Duration(micros)*time.Microsecond)
			return nil
		})
		return err
	})
	return s.pool.SendBatch(ctx, b).Close()
}

// TaskCounts counts one task's jobs by status; see store.Store.
func (s *Store) TaskCounts(ctx context.Context, task string) (map[store.Status]int64, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT status, count(*) FROM {s}.jobs WHERE task = $1 GROUP BY status`, task)
	if err != nil {
		return nil, fmt.Errorf("queuemax: task counts: %w", err)
	}
	out := make(map[store.Status]int64)
	var st string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error { out[store.Status(st)] += n; return nil })
	if err != nil {
		return nil, fmt.Errorf("queuemax: task counts: %w", err)
	}
	return out, nil
}

// HasWork reports whether any job is pending, scheduled or processing.
func (s *Store) HasWork(ctx context.Context) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	var has bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM {s}.jobs WHERE status = 'pending')
		OR EXISTS (SELECT 1 FROM {s}.jobs WHERE status = 'scheduled')
		OR EXISTS (SELECT 1 FROM {s}.jobs WHERE status = 'processing')`).Scan(&has)
	return has, err
}

// NextDue returns the earliest time a scheduled job becomes due; see
// store.Store. With the database clock the time is translated to the
// host's clock (host now + how far ahead the database sees it), so a
// caller waiting until then neither wakes early nor late on a skewed host.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	if s.closed.Load() {
		return time.Time{}, false, store.ErrClosed
	}
	var next pgtype.Timestamptz
	var ahead pgtype.Int8
	err := s.queryRow(ctx, `SELECT min(next_retry_at), (extract(epoch FROM min(next_retry_at) - now()) * 1000000)::bigint
		FROM {s}.jobs WHERE status = 'scheduled'`).Scan(&next, &ahead)
	if err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	if s.host {
		return next.Time.UTC(), true, nil
	}
	return hostNow().Add(time.Duration(ahead.Int64) * time.Microsecond).UTC(), true, nil
}
