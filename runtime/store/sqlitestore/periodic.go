package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Periodic state lives in shard 0's file, which every scheduler sharing the
// data directory writes through one SQLite write lock.

// PeriodicRegister records a periodic task's schedule; see store.Store.
func (s *Store) PeriodicRegister(ctx context.Context, p store.PeriodicParams) error {
	sh, err := s.shard(0)
	if err != nil {
		return err
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO qm_periodic (task, schedule, misfire, next_run, updated_at)
			VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (task) DO UPDATE SET schedule = ?2, misfire = ?3, next_run = ?4, updated_at = ?5
			WHERE schedule <> ?2 OR misfire <> ?3`,
			p.Task, p.Schedule, p.Misfire, store.FormatTime(p.Next), store.FormatTime(p.Now))
		return err
	})
}

// PeriodicList returns every registered periodic task; see store.Store.
func (s *Store) PeriodicList(ctx context.Context) ([]store.PeriodicState, error) {
	sh, err := s.shard(0)
	if err != nil {
		return nil, err
	}
	rows, err := sh.r.QueryContext(ctx, `SELECT task, schedule, misfire, next_run, last_run, last_job_id FROM qm_periodic ORDER BY task`)
	if err != nil {
		if sh.w == nil && isNoSuchTable(err) {
			return nil, nil // a read-only look at a directory never migrated to v4
		}
		return nil, fmt.Errorf("list periodic tasks: %w", err)
	}
	defer rows.Close()
	var out []store.PeriodicState
	for rows.Next() {
		var p store.PeriodicState
		var next string
		var last sql.NullString
		var job sql.NullInt64
		if err := rows.Scan(&p.Task, &p.Schedule, &p.Misfire, &next, &last, &job); err != nil {
			return nil, err
		}
		p.NextRun = store.ParseTime(next)
		p.LastRun = store.ParseTime(last.String)
		p.LastJobID = store.JobID(job.Int64)
		out = append(out, p)
	}
	return out, rows.Err()
}

func isNoSuchTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// PeriodicFire claims one slot; see store.Store.
func (s *Store) PeriodicFire(ctx context.Context, p store.PeriodicFireParams) (store.JobID, bool, error) {
	sh, err := s.shard(0)
	if err != nil {
		return 0, false, err
	}
	var id store.JobID
	var fired bool
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		id, fired = 0, false
		due, next, now := store.FormatTime(p.Due), store.FormatTime(p.Next), store.FormatTime(p.Job.Now)
		if p.Slot.IsZero() {
			n, err := affected(tx.ExecContext(ctx, `UPDATE qm_periodic SET next_run = ?, updated_at = ? WHERE task = ? AND next_run = ?`,
				next, now, p.Task, due))
			fired = n == 1
			return err
		}
		slot := store.FormatTime(p.Slot)
		// Compare and swap on the next run, then the unique (task, slot)
		// row; either failing means another scheduler fired this slot.
		n, err := affected(tx.ExecContext(ctx, `UPDATE qm_periodic SET next_run = ?, last_run = ?, updated_at = ?
			WHERE task = ? AND next_run = ?`, next, slot, now, p.Task, due))
		if err != nil || n == 0 {
			return err
		}
		n, err = affected(tx.ExecContext(ctx, `INSERT INTO qm_periodic_runs (task, slot, job_id, fired_at) VALUES (?, ?, 0, ?)
			ON CONFLICT DO NOTHING`, p.Task, slot, now))
		if err != nil || n == 0 {
			return err // the slot fired before (a schedule change moved next_run back): only advance
		}
		j := p.Job
		j.RunAt = time.Time{} // due now: the slot's time has come
		if id, err = insertJob(ctx, tx, tx.StmtContext(ctx, sh.stmts.insert), sh, &j, ""); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE qm_periodic_runs SET job_id = ? WHERE task = ? AND slot = ?`, int64(id), p.Task, slot); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE qm_periodic SET last_job_id = ? WHERE task = ?`, int64(id), p.Task); err != nil {
			return err
		}
		fired = true
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return id, fired, nil
}
