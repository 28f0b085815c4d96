package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/queuemax/queuemax/runtime/store"
)

// The task catalogue lives in shard 0's file only (qm_tasks), like the
// worker registry; TaskRename updates every shard's jobs.

// migrationCatalog creates the task catalogue's table.
var migrationCatalog = []string{
	`CREATE TABLE IF NOT EXISTS qm_tasks (
		name TEXT PRIMARY KEY,
		info TEXT NOT NULL,
		updated_at TEXT NOT NULL
	)`,
}

// TaskCatalogPut records tasks; see store.Store.
func (s *Store) TaskCatalogPut(ctx context.Context, recs []store.TaskRecord) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	sh, err := s.shard(0)
	if err != nil {
		return err
	}
	if sh.w == nil {
		return store.ErrReadOnly
	}
	for _, r := range recs {
		if r.Name == "" {
			return fmt.Errorf("queuemax: task catalogue: empty task name")
		}
		if !json.Valid(r.Info) {
			return fmt.Errorf("queuemax: task catalogue: info of %q is not JSON", r.Name)
		}
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		for _, r := range recs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO qm_tasks (name, info, updated_at) VALUES (?1, ?2, ?3)
				ON CONFLICT (name) DO UPDATE SET info = ?2, updated_at = ?3`,
				r.Name, string(r.Info), store.FormatTime(r.UpdatedAt)); err != nil {
				return fmt.Errorf("task catalogue: %w", err)
			}
		}
		return nil
	})
}

// TaskCatalog returns every record; see store.Store.
func (s *Store) TaskCatalog(ctx context.Context) ([]store.TaskRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	sh, err := s.shard(0)
	if err != nil {
		return nil, err
	}
	rows, err := sh.r.QueryContext(ctx, `SELECT name, info, updated_at FROM qm_tasks ORDER BY name`)
	if err != nil {
		if isNoSuchTable(err) {
			return nil, nil // a read-only look at a directory never migrated
		}
		return nil, fmt.Errorf("task catalogue: %w", err)
	}
	defer rows.Close()
	var out []store.TaskRecord
	for rows.Next() {
		var r store.TaskRecord
		var info, updated string
		if err := rows.Scan(&r.Name, &info, &updated); err != nil {
			return nil, err
		}
		r.Info, r.UpdatedAt = json.RawMessage(info), store.ParseTime(updated)
		out = append(out, r)
	}
	return out, rows.Err()
}

// TaskRename renames waiting jobs; see store.Store.
func (s *Store) TaskRename(ctx context.Context, from, to string) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	if from == to || to == "" {
		return 0, fmt.Errorf("queuemax: rename task %q to %q: want a different, non-empty name", from, to)
	}
	var total int64
	for _, sh := range s.shards {
		if sh.w == nil {
			return total, store.ErrReadOnly
		}
		var n int64
		err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
			res, err := tx.ExecContext(ctx, `UPDATE fila SET task = ?2 WHERE task = ?1 AND status IN ('pending', 'scheduled')`, from, to)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("shard %d: rename task: %w", sh.idx, err)
		}
		total += n
	}
	return total, nil
}
