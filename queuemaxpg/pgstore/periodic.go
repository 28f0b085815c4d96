package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// PeriodicRegister records a periodic task's schedule; see store.Store.
func (s *Store) PeriodicRegister(ctx context.Context, p store.PeriodicParams) error {
	if err := s.writable(); err != nil {
		return err
	}
	_, err := s.exec(ctx, `INSERT INTO {s}.periodic AS p (task, schedule, misfire, next_run, updated_at)
		VALUES ($2, $3, $4, $5, @now)
		ON CONFLICT (task) DO UPDATE SET schedule = excluded.schedule, misfire = excluded.misfire,
			next_run = excluded.next_run, updated_at = excluded.updated_at
		WHERE p.schedule <> excluded.schedule OR p.misfire <> excluded.misfire`,
		p.Now, p.Task, p.Schedule, p.Misfire, p.Next)
	if err != nil {
		return fmt.Errorf("queuemax: register periodic task %s: %w", p.Task, err)
	}
	return nil
}

// PeriodicList returns every registered periodic task; see store.Store.
func (s *Store) PeriodicList(ctx context.Context) ([]store.PeriodicState, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT task, schedule, misfire, next_run, last_run, last_job_id FROM {s}.periodic ORDER BY task`)
	if err != nil {
		return nil, fmt.Errorf("queuemax: list periodic tasks: %w", err)
	}
	var out []store.PeriodicState
	var p store.PeriodicState
	var next, last pgtype.Timestamptz
	var job pgtype.Int8
	_, err = pgx.ForEachRow(rows, []any{&p.Task, &p.Schedule, &p.Misfire, &next, &last, &job}, func() error {
		p.NextRun, p.LastRun, p.LastJobID = toTime(next), toTime(last), store.JobID(job.Int64)
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuemax: list periodic tasks: %w", err)
	}
	return out, nil
}

// PeriodicFire claims one slot in one transaction; see store.Store. The
// compare-and-swap on next_run and the unique (task, slot) row make each
// slot fire once however many schedulers run.
func (s *Store) PeriodicFire(ctx context.Context, p store.PeriodicFireParams) (store.JobID, bool, error) {
	if err := s.writable(); err != nil {
		return 0, false, err
	}
	schema := pgx.Identifier{s.schema}.Sanitize()
	q := func(sql string) string { return expand(sql, schema, s.host) }
	now := p.Job.Now
	if now.IsZero() {
		now = hostNow()
	}
	var id store.JobID
	var fired bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		id, fired = 0, false
		if p.Slot.IsZero() {
			tag, err := tx.Exec(ctx, q(`UPDATE {s}.periodic SET next_run = $2, updated_at = @now WHERE task = $3 AND next_run = $4`),
				now, p.Next, p.Task, p.Due)
			fired = tag.RowsAffected() == 1
			return err
		}
		tag, err := tx.Exec(ctx, q(`UPDATE {s}.periodic SET next_run = $2, last_run = $3, updated_at = @now
			WHERE task = $4 AND next_run = $5`), now, p.Next, p.Slot, p.Task, p.Due)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		tag, err = tx.Exec(ctx, q(`INSERT INTO {s}.periodic_runs (task, slot, job_id, fired_at) VALUES ($2, $3, 0, @now)
			ON CONFLICT DO NOTHING`), now, p.Task, p.Slot)
		if err != nil || tag.RowsAffected() == 0 {
			return err // the slot fired before (a schedule change moved next_run back): only advance
		}
		j := p.Job
		j.RunAt = time.Time{} // due now: the slot's time has come
		j.Now = now
		if err := s.checkShard(j.Shard); err != nil {
			return err
		}
		ids, err := insertWith(ctx, pgxQuerier{tx}, s.q.insert, []store.InsertParams{j})
		if err != nil {
			return err
		}
		id = ids[0]
		if _, err := tx.Exec(ctx, q(`WITH r AS (UPDATE {s}.periodic_runs SET job_id = $1 WHERE task = $2 AND slot = $3)
			UPDATE {s}.periodic SET last_job_id = $1 WHERE task = $2`), int64(id), p.Task, p.Slot); err != nil {
			return err
		}
		fired = true
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("queuemax: fire periodic task %s: %w", p.Task, err)
	}
	return id, fired, nil
}

// WorkerPut inserts or refreshes a worker's entry; see store.Store. With
// the database clock its times are the database's: r.UpdatedAt becomes
// now() and the other two keep their distance from it.
func (s *Store) WorkerPut(ctx context.Context, r store.WorkerRecord) error {
	if err := s.writable(); err != nil {
		return err
	}
	if r.ID == "" {
		return fmt.Errorf("queuemax: worker registry: empty worker id")
	}
	if !json.Valid(r.Info) {
		return fmt.Errorf("queuemax: worker registry: info of %q is not JSON", r.ID)
	}
	_, err := s.exec(ctx, `WITH up AS (INSERT INTO {s}.workers AS w (id, info, started_at, updated_at, expires_at)
			VALUES ($2, $3::jsonb, @now + $4`+us+`, @now, @now + $5`+us+`)
			ON CONFLICT (id) DO UPDATE SET info = excluded.info, updated_at = excluded.updated_at, expires_at = excluded.expires_at)
		DELETE FROM {s}.workers WHERE expires_at <= @now AND id <> $2`,
		r.UpdatedAt, r.ID, string(r.Info), offset(r.StartedAt, r.UpdatedAt), offset(r.ExpiresAt, r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("queuemax: worker registry: %w", err)
	}
	return nil
}

// WorkerDelete removes a worker's entry; see store.Store.
func (s *Store) WorkerDelete(ctx context.Context, id string) error {
	if err := s.writable(); err != nil {
		return err
	}
	_, err := s.exec(ctx, `DELETE FROM {s}.workers WHERE id = $1`, id)
	return err
}

// WorkerList returns the live entries; see store.Store.
func (s *Store) WorkerList(ctx context.Context, now time.Time) ([]store.WorkerRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT id, info, started_at, updated_at, expires_at FROM {s}.workers
		WHERE expires_at > @now ORDER BY id`, now)
	if err != nil {
		return nil, fmt.Errorf("queuemax: list workers: %w", err)
	}
	var out []store.WorkerRecord
	var r store.WorkerRecord
	var info []byte
	var started, updated, expires time.Time
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &info, &started, &updated, &expires}, func() error {
		r.Info = json.RawMessage(append([]byte(nil), info...))
		r.StartedAt, r.UpdatedAt, r.ExpiresAt = started.UTC(), updated.UTC(), expires.UTC()
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuemax: list workers: %w", err)
	}
	return out, nil
}
