package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// The worker registry lives in shard 0's file, like the periodic state.

// WorkerPut inserts or refreshes a worker's entry; see store.Store.
func (s *Store) WorkerPut(ctx context.Context, r store.WorkerRecord) error {
	sh, err := s.shard(0)
	if err != nil {
		return err
	}
	if sh.w == nil {
		return store.ErrReadOnly
	}
	if r.ID == "" {
		return fmt.Errorf("queuemax: worker registry: empty worker id")
	}
	if !json.Valid(r.Info) {
		return fmt.Errorf("queuemax: worker registry: info of %q is not JSON", r.ID)
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO qm_workers (id, info, started_at, updated_at, expires_at)
			VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (id) DO UPDATE SET info = ?2, updated_at = ?4, expires_at = ?5`,
			r.ID, string(r.Info), store.FormatTime(r.StartedAt), store.FormatTime(r.UpdatedAt), store.FormatTime(r.ExpiresAt)); err != nil {
			return fmt.Errorf("worker registry: %w", err)
		}
		// Entries of processes that died without a clean stop.
		_, err := tx.ExecContext(ctx, `DELETE FROM qm_workers WHERE expires_at <= ?1`, store.FormatTime(r.UpdatedAt))
		return err
	})
}

// WorkerDelete removes a worker's entry; see store.Store.
func (s *Store) WorkerDelete(ctx context.Context, id string) error {
	sh, err := s.shard(0)
	if err != nil {
		return err
	}
	if sh.w == nil {
		return store.ErrReadOnly
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM qm_workers WHERE id = ?1`, id)
		return err
	})
}

// WorkerList returns the live entries; see store.Store.
func (s *Store) WorkerList(ctx context.Context, now time.Time) ([]store.WorkerRecord, error) {
	sh, err := s.shard(0)
	if err != nil {
		return nil, err
	}
	rows, err := sh.r.QueryContext(ctx, `SELECT id, info, started_at, updated_at, expires_at FROM qm_workers
		WHERE expires_at > ?1 ORDER BY id`, store.FormatTime(now))
	if err != nil {
		if sh.w == nil && isNoSuchTable(err) {
			return nil, nil // a read-only look at a directory never migrated to v5
		}
		return nil, fmt.Errorf("list workers: %w", err)
	}
	defer rows.Close()
	var out []store.WorkerRecord
	for rows.Next() {
		var r store.WorkerRecord
		var info, started, updated, expires string
		if err := rows.Scan(&r.ID, &info, &started, &updated, &expires); err != nil {
			return nil, err
		}
		r.Info = json.RawMessage(info)
		r.StartedAt = store.ParseTime(started)
		r.UpdatedAt = store.ParseTime(updated)
		r.ExpiresAt = store.ParseTime(expires)
		out = append(out, r)
	}
	return out, rows.Err()
}
