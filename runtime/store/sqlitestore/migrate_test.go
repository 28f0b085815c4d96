package sqlitestore

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// TestMigrate_FromVersion10 opens a directory the previous queuemax
// version wrote (schema version 10: the claim index over every status, the
// finished index without cancelled rows, every queue in the queue index)
// holding pending, completed and cancelled jobs, and opened by queue-max
// since (which created its indexes again): the file migrates to the current
// indexes, queue-max's status indexes are dropped, and its jobs keep their
// states, counts and order.
func TestMigrate_FromVersion10(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, "shard_0.db"), Options{BusyTimeout: time.Second, CacheSize: 100}, false))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, baseSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO shard_metadata (shard_id, version, created_at) VALUES (0, 0, ?)`, store.FormatTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations {
		if m.version > 10 {
			break
		}
		if err := applyMigration(ctx, db, 0, m); err != nil {
			t.Fatalf("migration %d: %v", m.version, err)
		}
	}
	now := store.FormatTime(time.Now())
	for _, q := range []string{
		// queue-max opened the file since: it created its indexes again.
		`CREATE INDEX IF NOT EXISTS idx_pop_job ON fila(status, next_retry_at, priority DESC, id)`,
		`CREATE INDEX IF NOT EXISTS idx_status_created ON fila(status, created_at)`,
		`INSERT INTO fila (id, payload, status, priority, task, created_at, shard_id) VALUES (1, '{}', 'pending', 0, 't', '` + now + `', 0)`,
		`INSERT INTO fila (id, payload, status, priority, task, created_at, shard_id) VALUES (2, '{}', 'pending', 2, 't', '` + now + `', 0)`,
		`INSERT INTO fila (id, payload, status, task, created_at, completed_at, shard_id) VALUES (3, '{}', 'completed', 't', '` + now + `', '` + now + `', 0)`,
		`INSERT INTO fila (id, payload, status, task, created_at, completed_at, shard_id) VALUES (4, '{}', 'cancelled', 't', '` + now + `', '` + now + `', 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	st, err := Open(ctx, Options{Dir: dir, Shards: 1})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer st.Close()
	var version int
	if err := st.shards[0].r.QueryRowContext(ctx, `SELECT version FROM shard_metadata WHERE shard_id = 0`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != schemaVersion {
		t.Errorf("version %d after Open, want %d", version, schemaVersion)
	}
	rows, err := st.shards[0].r.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'fila' AND sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	var idx []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		idx = append(idx, n)
	}
	rows.Close()
	for _, gone := range []string{"idx_qm_claim", "idx_qm_finished", "idx_pop_job", "idx_status_created"} {
		if slices.Contains(idx, gone) {
			t.Errorf("index %s still there: %v", gone, idx)
		}
	}
	for _, want := range []string{"idx_qm_ready", "idx_qm_done", "idx_qm_claim_queue", "idx_heartbeat"} {
		if !slices.Contains(idx, want) {
			t.Errorf("index %s missing: %v", want, idx)
		}
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := stats[0]; s.Pending != 2 || s.Completed != 1 || s.Processing != 0 {
		t.Errorf("Stats = %+v, want 2 pending, 1 completed", s)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 10, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, j := range jobs {
		got = append(got, j.ID.Seq())
	}
	if !slices.Equal(got, []int64{2, 1}) {
		t.Errorf("claimed %v, want [2 1] (priority, then FIFO)", got)
	}
}
