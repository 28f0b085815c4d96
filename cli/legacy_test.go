package cli_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestReadOnlyOnQueueMaxDirectory runs the read-only commands on a
// directory queue-max 0.2.0 wrote and queuemax never migrated (schema v2:
// no task, lease or result columns).
func TestReadOnlyOnQueueMaxDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		db, err := sql.Open("sqlite", filepath.Join(dir, fmt.Sprintf("shard_%d.db", i)))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{
			`PRAGMA journal_mode = WAL`,
			`CREATE TABLE fila (id INTEGER PRIMARY KEY AUTOINCREMENT, pagina_id INTEGER, payload TEXT NOT NULL,
				status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','processing','failed','completed','cancelled','scheduled')),
				priority INTEGER NOT NULL DEFAULT 0, tentativas INTEGER NOT NULL DEFAULT 0, max_tentativas INTEGER NOT NULL DEFAULT 3,
				retry_delay INTEGER NOT NULL DEFAULT 60, last_error TEXT, error_type TEXT, error_stack TEXT, worker_id TEXT,
				heartbeat TEXT, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, started_at TEXT, completed_at TEXT, next_retry_at TEXT)`,
			`CREATE TABLE shard_metadata (shard_id INTEGER PRIMARY KEY, version INTEGER DEFAULT 1, created_at TEXT DEFAULT CURRENT_TIMESTAMP,
				last_vacuum TEXT, total_jobs_processed INTEGER DEFAULT 0, total_jobs_failed INTEGER DEFAULT 0)`,
			`CREATE TABLE dead_letter_queue (id INTEGER PRIMARY KEY AUTOINCREMENT, original_job_id INTEGER, payload TEXT NOT NULL,
				error TEXT NOT NULL, error_type TEXT NOT NULL, failed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, shard_id INTEGER)`,
			fmt.Sprintf(`INSERT INTO shard_metadata (shard_id, version) VALUES (%d, 2)`, i),
			`INSERT INTO fila (payload) VALUES ('{"n": 1}')`,
			`INSERT INTO dead_letter_queue (original_job_id, payload, error, error_type, shard_id) VALUES (9, '{}', 'boom', 'ValueError', 0)`,
		} {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		db.Close()
	}
	d := []string{"--data-dir", dir}
	if jobs := listJobs(t, queuemaxBin, append(d, "list")...); len(jobs) != 2 {
		t.Errorf("list: %d jobs, want 2: %v", len(jobs), jobs)
	}
	if dl := listJobs(t, queuemaxBin, append(d, "dlq", "list")...); len(dl) != 2 {
		t.Errorf("dlq list: %d rows, want 2: %v", len(dl), dl)
	}
	ok(t, qm(t, append(d, "stats")...), "stats")
	// Nothing was migrated.
	db, err := sql.Open("sqlite", filepath.Join(dir, "shard_0.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT version FROM shard_metadata WHERE shard_id = 0`).Scan(&v); err != nil || v != 2 {
		t.Errorf("schema version %d, %v; want 2 (read-only commands migrate nothing)", v, err)
	}
}

// TestShardFlagOutOfRange: --shard -1 is a shard number out of range, not
// "every shard" (which is the flag left out).
func TestShardFlagOutOfRange(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	d := []string{"--data-dir", dir}
	for _, args := range [][]string{
		{"list", "--shard", "-1"}, {"list", "--shard", "2"}, {"dlq", "list", "--shard", "-1"},
		{"retry", "--shard", "-1"}, {"retry", "--shard", "2"},
	} {
		res := qm(t, append(d, args...)...)
		if res.code == 0 {
			t.Errorf("%q succeeded, want a usage error", args)
		}
		if !strings.Contains(res.stderr, "shard") {
			t.Errorf("%q: stderr %q does not name the shard", args, res.stderr)
		}
	}
	ok(t, qm(t, append(d, "list")...), "list without --shard")
	ok(t, qm(t, append(d, "retry")...), "retry without --shard")
}
