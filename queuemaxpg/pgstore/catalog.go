package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// The task catalogue: one row per task in {s}.tasks.

// migrationCatalog creates the task catalogue's table.
var migrationCatalog = []string{
	`CREATE TABLE IF NOT EXISTS {s}.tasks (
		name text PRIMARY KEY,
		info jsonb NOT NULL,
		updated_at timestamptz NOT NULL
	)`,
}

// TaskCatalogPut records tasks in one statement; see store.Store.
func (s *Store) TaskCatalogPut(ctx context.Context, recs []store.TaskRecord) error {
	if err := s.writable(); err != nil {
		return err
	}
	names := make([]string, len(recs))
	infos := make([]string, len(recs))
	ats := make([]time.Time, len(recs))
	for i, r := range recs {
		if r.Name == "" {
			return fmt.Errorf("queuemax: task catalogue: empty task name")
		}
		if !json.Valid(r.Info) {
			return fmt.Errorf("queuemax: task catalogue: info of %q is not JSON", r.Name)
		}
		names[i], infos[i], ats[i] = r.Name, string(r.Info), r.UpdatedAt
	}
	if len(recs) == 0 {
		return nil
	}
	_, err := s.exec(ctx, `INSERT INTO {s}.tasks AS t (name, info, updated_at)
		SELECT n, i::jsonb, a FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS u(n, i, a)
		ON CONFLICT (name) DO UPDATE SET info = excluded.info, updated_at = excluded.updated_at`, names, infos, ats)
	if err != nil {
		return fmt.Errorf("queuemax: task catalogue: %w", err)
	}
	return nil
}

// TaskCatalog returns every record; see store.Store.
func (s *Store) TaskCatalog(ctx context.Context) ([]store.TaskRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT name, info::text, updated_at FROM {s}.tasks ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("queuemax: task catalogue: %w", err)
	}
	defer rows.Close()
	var out []store.TaskRecord
	for rows.Next() {
		var r store.TaskRecord
		var info string
		var at pgtype.Timestamptz
		if err := rows.Scan(&r.Name, &info, &at); err != nil {
			return nil, err
		}
		r.Info, r.UpdatedAt = json.RawMessage(info), toTime(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// TaskRename renames waiting jobs in one statement; see store.Store.
func (s *Store) TaskRename(ctx context.Context, from, to string) (int64, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if from == to || to == "" {
		return 0, fmt.Errorf("queuemax: rename task %q to %q: want a different, non-empty name", from, to)
	}
	n, err := s.exec(ctx, `UPDATE {s}.jobs SET task = $2 WHERE task = $1 AND status IN ('pending', 'scheduled')`, from, to)
	if err != nil {
		return 0, fmt.Errorf("queuemax: rename task: %w", err)
	}
	return int64(n), nil
}
