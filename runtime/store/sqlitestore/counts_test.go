package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// TestCounts_UnmigratedQueueMaxFile checks the counts of a read-only store
// on a file queue-max 0.2.0 wrote (no task columns): every job and dead
// letter counts under the task "".
func TestCounts_UnmigratedQueueMaxFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, "shard_0.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE TABLE fila (id INTEGER PRIMARY KEY AUTOINCREMENT, pagina_id INTEGER, payload TEXT NOT NULL,
			status TEXT NOT NULL DEFAULT 'pending', priority INTEGER NOT NULL DEFAULT 0, tentativas INTEGER NOT NULL DEFAULT 0,
			max_tentativas INTEGER NOT NULL DEFAULT 3, retry_delay INTEGER NOT NULL DEFAULT 60, last_error TEXT, error_type TEXT,
			error_stack TEXT, worker_id TEXT, heartbeat TEXT, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, started_at TEXT,
			completed_at TEXT, next_retry_at TEXT)`,
		`CREATE TABLE shard_metadata (shard_id INTEGER PRIMARY KEY, version INTEGER DEFAULT 1, created_at TEXT DEFAULT CURRENT_TIMESTAMP,
			last_vacuum TEXT, total_jobs_processed INTEGER DEFAULT 0, total_jobs_failed INTEGER DEFAULT 0)`,
		`CREATE TABLE dead_letter_queue (id INTEGER PRIMARY KEY AUTOINCREMENT, original_job_id INTEGER, payload TEXT NOT NULL,
			error TEXT NOT NULL, error_type TEXT NOT NULL, failed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, shard_id INTEGER)`,
		`INSERT INTO shard_metadata (shard_id, version) VALUES (0, 2)`,
		`INSERT INTO fila (payload) VALUES ('{}'), ('{}')`,
		`INSERT INTO fila (payload, status) VALUES ('{}', 'failed')`,
		`INSERT INTO dead_letter_queue (original_job_id, payload, error, error_type, shard_id) VALUES (3, '{}', 'boom', 'ValueError', 0)`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: 1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.JobCounts(t.Context())
	if err != nil {
		t.Fatalf("JobCounts: %v", err)
	}
	want := []store.JobCount{
		{Count: 1}, // the dead letter
		{Status: store.StatusFailed, Count: 1},
		{Status: store.StatusPending, Count: 2},
	}
	byStatus := cmpopts.SortSlices(func(a, b store.JobCount) bool { return a.Status < b.Status })
	if diff := cmp.Diff(want, got, byStatus); diff != "" {
		t.Errorf("JobCounts (-want +got):\n%s", diff)
	}
	backlog, err := st.TaskBacklog(t.Context())
	if diff := cmp.Diff(map[string]store.TaskBacklog{"": {Pending: 2}}, backlog); err != nil || diff != "" {
		t.Errorf("TaskBacklog: %v (-want +got):\n%s", err, diff)
	}
}
