package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuemax/queuemax/runtime/store"
)

// Job steps' progress (store.JobProgress) is jobs.progress: a jsonb object
// keyed by step name, NULL for a job that records none (the design of the
// SQLite store, runtime/store/sqlitestore/progress.go).

// progressMigration adds the column.
var progressMigration = migration{
	version: 13,
	name:    "job steps: each job's recorded progress",
	stmts: []string{
		`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS progress jsonb`,
	},
}

const (
	// sqlSetProgress sets one step's entry while the lease holds: the
	// fence and the write in one statement (a lease lost while it waited
	// for the row is seen by the re-check of the WHERE clause).
	sqlSetProgress = `UPDATE {s}.jobs SET progress = coalesce(progress, '{}'::jsonb) || jsonb_build_object($3::text, $4::jsonb)
		WHERE id = $1 AND lease = $2 AND status = 'processing' AND ($5::text = '' OR worker_id = $5::text)`
	// sqlResetProgress replaces a job's progress unless a worker holds it.
	sqlResetProgress = `UPDATE {s}.jobs SET progress = CASE WHEN status = 'processing' THEN progress ELSE $2::jsonb END
		WHERE id = $1 AND shard = $3 RETURNING status`
)

// sqlSetProgressSet is sqlSetProgress for the writes of concurrent
// callers, grouped into one statement (and one commit): $1…$5 are arrays
// of ids, leases, step names, entries and workers; the entries of one job
// are merged into one patch. RETURNING says which leases held.
const sqlSetProgressSet = `WITH u AS (SELECT id, lease, worker, jsonb_object_agg(name, entry::jsonb) AS patch
		FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[]) AS x(id, lease, name, entry, worker)
		GROUP BY id, lease, worker)
	UPDATE {s}.jobs j SET progress = coalesce(j.progress, '{}'::jsonb) || u.patch
	FROM u WHERE j.id = u.id AND j.lease = u.lease AND j.status = 'processing' AND (u.worker = '' OR j.worker_id = u.worker)
	RETURNING j.id, j.lease`

// SetProgress writes one step's entry, fenced by the lease; see
// store.JobProgress. It joins the writes of concurrent callers in one
// statement and one commit.
func (s *Store) SetProgress(ctx context.Context, p store.ProgressParams) error {
	if err := s.writable(); err != nil {
		return err
	}
	if _, err := progressArgs(p); err != nil {
		return err
	}
	ok, err := s.progress.do(ctx, []store.ProgressParams{p})
	if err != nil {
		return fmt.Errorf("queuemax: job %d: record step %q: %w", p.ID, p.Step.Name, err)
	}
	if !ok[0] {
		return fmt.Errorf("%w: job %d, step %q", store.ErrLeaseLost, p.ID, p.Step.Name)
	}
	return nil
}

// progressBatch writes a group of step entries in one statement.
func (s *Store) progressBatch(ctx context.Context, ps []store.ProgressParams) ([]bool, error) {
	n := len(ps)
	ids, leases := make([]int64, n), make([]int64, n)
	names, entries, workers := make([]string, n), make([]string, n), make([]string, n)
	for i, p := range ps {
		args, err := progressArgs(p)
		if err != nil {
			return nil, err
		}
		ids[i], leases[i] = p.ID.Seq(), p.Token
		names[i], entries[i], workers[i] = p.Step.Name, args[3].(string), p.WorkerID
	}
	rows, err := s.query(ctx, sqlSetProgressSet, ids, leases, names, entries, workers)
	if err != nil {
		s.lost(err)
		return nil, err
	}
	held := make(map[leaseKey]bool)
	for rows.Next() {
		var k leaseKey
		if err := rows.Scan(&k.id, &k.token); err != nil {
			rows.Close()
			return nil, err
		}
		held[k] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		s.lost(err)
		return nil, err
	}
	ok := make([]bool, n)
	for i := range ps {
		ok[i] = held[leaseKey{ids[i], leases[i]}]
	}
	return ok, nil
}

// SetProgressTx writes one step's entry inside the application's
// transaction tx (a pgx.Tx, or a *sql.Tx of the pgx stdlib driver); see
// store.JobProgress.
func (s *Store) SetProgressTx(ctx context.Context, tx any, p store.ProgressParams) error {
	if err := s.writable(); err != nil {
		return err
	}
	args, err := progressArgs(p)
	if err != nil {
		return err
	}
	q := expand(sqlSetProgress, pgx.Identifier{s.schema}.Sanitize(), s.host)
	var n int64
	switch t := tx.(type) {
	case pgx.Tx:
		tag, e := t.Exec(ctx, q, args...)
		n, err = tag.RowsAffected(), e
	case *sql.Tx:
		res, e := t.ExecContext(ctx, q, args...)
		if err = e; err == nil {
			n, err = res.RowsAffected()
		}
	default:
		return fmt.Errorf("queuemax: SetProgressTx: unsupported transaction type %T (want pgx.Tx, or *sql.Tx from the pgx stdlib driver)", tx)
	}
	if err != nil {
		return fmt.Errorf("queuemax: job %d: record step %q in the transaction: %w", p.ID, p.Step.Name, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: job %d, step %q", store.ErrLeaseLost, p.ID, p.Step.Name)
	}
	return nil
}

func progressArgs(p store.ProgressParams) ([]any, error) {
	if err := store.CheckStepName(p.Step.Name); err != nil {
		return nil, err
	}
	now := p.Now
	if now.IsZero() {
		now = hostNow()
	}
	entry, err := store.EncodeProgressEntry(p.Step, p.Seq, now)
	if err != nil {
		return nil, err
	}
	return []any{p.ID.Seq(), p.Token, p.Step.Name, string(entry), p.WorkerID}, nil
}

// Progress returns a job's recorded progress; see store.JobProgress.
func (s *Store) Progress(ctx context.Context, id store.JobID) ([]store.JobStep, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	var raw []byte
	err := s.queryRow(ctx, `SELECT progress FROM {s}.jobs WHERE id = $1 AND shard = $2`, id.Seq(), int32(id.Shard())).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", store.ErrJobNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("queuemax: read job %d's progress: %w", id, err)
	}
	return store.DecodeProgress(raw), nil
}

// ResetProgress replaces the progress of a job no worker holds; see
// store.JobProgress.
func (s *Store) ResetProgress(ctx context.Context, id store.JobID, steps []store.JobStep, now time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	raw, err := store.EncodeProgress(steps, now)
	if err != nil {
		return err
	}
	var v any
	if raw != nil {
		v = string(raw)
	}
	var status string
	err = s.queryRow(ctx, sqlResetProgress, id.Seq(), v, int32(id.Shard())).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %d", store.ErrJobNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("queuemax: reset job %d's progress: %w", id, err)
	}
	if status == string(store.StatusProcessing) {
		return fmt.Errorf("%w: job %d: its steps' progress can change only while no worker holds it", store.ErrJobProcessing, id)
	}
	return nil
}
