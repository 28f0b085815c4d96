package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// TestQueues_QueueMaxRows checks that rows written the way queue-max
// writes them (no queue column in the INSERT), into a migrated file, are in
// the default queue: a claim capped per queue takes them, QueueList counts
// them, and a read-only store on a file queue-max created (no queue column,
// no qm_queues) lists them too.
func TestQueues_QueueMaxRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := t.Context()
	// An unmigrated queue-max file first: read-only, every job is default.
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
		`INSERT INTO fila (payload) VALUES ('{"n":1}')`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	ro, err := sqlitestore.Open(ctx, sqlitestore.Options{Dir: dir, Shards: 1, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := ro.QueueList(ctx)
	ro.Close()
	if err != nil {
		t.Fatalf("QueueList (read-only, unmigrated): %v", err)
	}
	if diff := cmp.Diff([]store.QueueState{{Name: "default", Pending: 1}}, qs); diff != "" {
		t.Errorf("QueueList (read-only, unmigrated) mismatch (-want +got):\n%s", diff)
	}

	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Dir: dir, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// queue-max writes into the migrated file without naming the column.
	if _, err := db.Exec(`INSERT INTO fila (payload, priority) VALUES ('{"n":2}', 2)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := st.Insert(ctx, []store.InsertParams{{Task: "t.E", Payload: []byte(`{}`), MaxAttempts: 1, Queue: "emails", Now: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 10, Now: time.Now(),
		Queues: []store.QueueLimit{{Queue: store.DefaultQueue, Max: 10}}})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	var payloads []string
	for _, j := range got {
		payloads = append(payloads, string(j.Payload))
		if j.Queue != store.DefaultQueue {
			t.Errorf("claimed job %v in queue %q, want default", j.ID, j.Queue)
		}
	}
	if diff := cmp.Diff([]string{`{"n":2}`, `{"n":1}`}, payloads); diff != "" {
		t.Errorf("Claim of the default queue mismatch (-want +got):\n%s", diff)
	}
}
