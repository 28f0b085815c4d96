package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// migrate creates the schema on a new file and brings an existing one (ours
// or queue-max's) up to schemaVersion, one transaction per step.
func migrate(ctx context.Context, db *sql.DB, shardIdx int, layout Layout) error {
	// The first statement reads the file header, so a file that is not a
	// database fails here.
	var fresh int
	if err := db.QueryRowContext(ctx, `SELECT count(*) = 0 FROM sqlite_master WHERE type = 'table' AND name = 'fila'`).Scan(&fresh); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, baseSchema); err != nil {
		return err
	}
	version := 2 // a queue-max file without our metadata row
	if fresh == 1 {
		version = 0
	}
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT version FROM shard_metadata WHERE shard_id = ?`, shardIdx).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := db.ExecContext(ctx, `INSERT INTO shard_metadata (shard_id, version, created_at) VALUES (?, ?, ?)`,
			shardIdx, version, store.FormatTime(time.Now())); err != nil {
			return err
		}
	case err != nil:
		return err
	case v.Valid:
		version = int(v.Int64)
	}
	applied := false
	for _, m := range migrations {
		if m.version <= version {
			continue
		}
		if err := applyMigration(ctx, db, shardIdx, m); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		applied = true
	}
	if applied {
		// The migrations' pages (the schema's text above all) would
		// otherwise sit in the WAL, ~400 KiB per new shard, until the first
		// automatic checkpoint.
		if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return fmt.Errorf("checkpoint after migrating: %w", err)
		}
	}
	// queue-max creates its indexes again whenever it opens the file; the
	// ones over status are rewritten at every status change and serve none
	// of our statements, so they go again (each drop is one statement, and
	// nothing when the index is absent). queue-max does not open a native
	// file.
	if layout == LayoutNative {
		return nil
	}
	for _, idx := range queueMaxStatusIndexes {
		if _, err := db.ExecContext(ctx, `DROP INDEX IF EXISTS `+idx); err != nil {
			return fmt.Errorf("drop queue-max index %s: %w", idx, err)
		}
	}
	// The index that serves queue-max's pop instead (a layout object; a
	// file of this layout recorded before schema 19 gets it here).
	if _, err := db.ExecContext(ctx, sqlQueueMaxPopIndex); err != nil {
		return fmt.Errorf("queue-max pop index: %w", err)
	}
	return nil
}

// queueMaxStatusIndexes are queue-max's indexes that our schema replaces
// (migration 3 dropped them first). idx_heartbeat stays: it is not
// rewritten by status changes alone, and queue-max's orphan recovery reads it.
var queueMaxStatusIndexes = []string{"idx_pop_job", "idx_status_priority", "idx_next_retry", "idx_created_at", "idx_status_created"}

func applyMigration(ctx context.Context, db *sql.DB, shardIdx int, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, c := range m.addColumns {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, c[0], c[1]).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, c[0], c[1], c[2])); err != nil {
				return err
			}
		}
	}
	for _, s := range m.stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", strings.SplitN(s, "\n", 2)[0], err)
		}
	}
	if m.version == 3 {
		if _, err := tx.ExecContext(ctx, `UPDATE fila SET shard_id = ? WHERE shard_id IS NULL`, shardIdx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE dead_letter_queue SET shard_id = ? WHERE shard_id IS NULL`, shardIdx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE shard_metadata SET version = ? WHERE shard_id = ?`, m.version, shardIdx); err != nil {
		return err
	}
	return tx.Commit()
}
