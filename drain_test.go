package queuemax

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// TestClient_DrainManyJobs drains 100,000 jobs on 8 shards with 16
// goroutines through Claim and Complete, and checks that every job was
// claimed exactly once.
func TestClient_DrainManyJobs(t *testing.T) {
	t.Parallel()
	// 100k jobs without the race detector; under it (make test) a tenth,
	// still ten EnqueueMany batches over 8 shards. make bench drains more.
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 10_000
	}
	b := setup(t, Config{Shards: 8})
	start := time.Now()
	params := make([]EnqueueParams, 0, 10_000)
	var ids []JobID
	for i := range n {
		params = append(params, EnqueueParams{Task: "t", Payload: echoArgs{i}})
		if len(params) == cap(params) || i == n-1 {
			got, err := b.c.EnqueueMany(b.ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, got...)
			params = params[:0]
		}
	}
	t.Logf("enqueued %d jobs in %v", n, time.Since(start))
	start = time.Now()
	var mu sync.Mutex
	seen := make(map[JobID]int, n)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			local := make([]JobID, 0, n/8)
			for {
				jobs, err := b.c.Claim(b.ctx, fmt.Sprint("w", w), 64)
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if len(jobs) == 0 {
					break
				}
				acks := make([]storeAck, len(jobs))
				for i, j := range jobs {
					acks[i] = storeAck{j}
					local = append(local, j.ID)
				}
				if err := completeAll(b, acks); err != nil {
					t.Errorf("Complete: %v", err)
					return
				}
			}
			mu.Lock()
			for _, id := range local {
				seen[id]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("drained in %v", time.Since(start))
	var dup, lost int
	for _, id := range ids {
		switch seen[id] {
		case 0:
			lost++
		case 1:
		default:
			dup++
		}
	}
	if dup != 0 || lost != 0 || len(seen) != n {
		t.Errorf("duplicates=%d losses=%d distinct=%d, want 0, 0, %d", dup, lost, len(seen), n)
	}
	s, err := b.c.Stats(b.ctx)
	if err != nil || s.TotalProcessed != int64(n) || s.Pending+s.Processing != 0 {
		t.Errorf("stats processed=%d pending=%d processing=%d err=%v", s.TotalProcessed, s.Pending, s.Processing, err)
	}
}

type storeAck struct{ j *Job }

// completeAll acknowledges a batch in one call per shard group.
func completeAll(b *testBundle, acks []storeAck) error {
	var wg sync.WaitGroup
	errs := make([]error, len(acks))
	for i, a := range acks {
		wg.Go(func() { errs[i] = b.c.Complete(b.ctx, a.j, nil) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestOpen_MigratesQueueMaxFiles opens shard files written the way
// queue-max 0.2.0 writes them and checks that their jobs survive and run.
func TestOpen_MigratesQueueMaxFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	future := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	for i := range 2 {
		db, err := sql.Open("sqlite", filepath.Join(dir, fmt.Sprintf("shard_%d.db", i)))
		if err != nil {
			t.Fatal(err)
		}
		stmts := []string{
			`CREATE TABLE fila (id INTEGER PRIMARY KEY AUTOINCREMENT, pagina_id INTEGER, payload TEXT NOT NULL,
				status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','processing','failed','completed','cancelled','scheduled')),
				priority INTEGER NOT NULL DEFAULT 0, tentativas INTEGER NOT NULL DEFAULT 0, max_tentativas INTEGER NOT NULL DEFAULT 3,
				retry_delay INTEGER NOT NULL DEFAULT 60, last_error TEXT, error_type TEXT, error_stack TEXT, worker_id TEXT,
				heartbeat TEXT, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, started_at TEXT, completed_at TEXT, next_retry_at TEXT)`,
			`CREATE TABLE shard_metadata (shard_id INTEGER PRIMARY KEY, version INTEGER DEFAULT 1, created_at TEXT DEFAULT CURRENT_TIMESTAMP,
				last_vacuum TEXT, total_jobs_processed INTEGER DEFAULT 0, total_jobs_failed INTEGER DEFAULT 0)`,
			`CREATE TABLE dead_letter_queue (id INTEGER PRIMARY KEY AUTOINCREMENT, original_job_id INTEGER, payload TEXT NOT NULL,
				error TEXT NOT NULL, error_type TEXT NOT NULL, failed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, shard_id INTEGER)`,
			`CREATE INDEX idx_pop_job ON fila(status, next_retry_at, priority DESC, id)`,
			`CREATE INDEX idx_created_at ON fila(created_at)`,
			fmt.Sprintf(`INSERT INTO shard_metadata (shard_id, version) VALUES (%d, 2)`, i),
			`INSERT INTO fila (pagina_id, payload, priority, max_tentativas) VALUES (7, '{"task": "legacy", "n": 1}', 2, 4)`,
			`INSERT INTO fila (payload, next_retry_at, tentativas) VALUES ('{"n": 2}', '` + future + `', 1)`,
			`INSERT INTO dead_letter_queue (original_job_id, payload, error, error_type, shard_id) VALUES (99, '{}', 'boom', 'ValueError', 0)`,
		}
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		db.Close()
	}
	b := setup(t, Config{Dir: dir, Shards: 2})
	s, err := b.c.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pending != 2 || s.Scheduled != 2 || s.DeadLetters != 2 {
		t.Errorf("stats after migration pending=%d scheduled=%d dead=%d, want 2, 2, 2", s.Pending, s.Scheduled, s.DeadLetters)
	}
	jobs, err := b.c.Claim(b.ctx, "w", 10)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Claim = %d jobs, %v; want the 2 ready legacy jobs", len(jobs), err)
	}
	for _, j := range jobs {
		var p map[string]any
		if err := json.Unmarshal(j.Payload, &p); err != nil || p["task"] != "legacy" || j.Priority != PriorityHigh ||
			j.CreatedAt.IsZero() || *j.PartitionKey != 7 || j.MaxAttempts != 4 {
			t.Errorf("legacy job = %+v", j)
		}
	}
	b.c.Close()
	// Reopening runs no migration again and keeps the data.
	b2 := setup(t, Config{Dir: dir, Shards: 2})
	if s, _ := b2.c.Stats(b2.ctx); s.Processing != 2 || s.Scheduled != 2 {
		t.Errorf("after reopen processing=%d scheduled=%d, want 2 and 2", s.Processing, s.Scheduled)
	}
	db, _ := sql.Open("sqlite", filepath.Join(dir, "shard_1.db"))
	defer db.Close()
	var version int
	var idx int
	db.QueryRow(`SELECT version FROM shard_metadata WHERE shard_id = 1`).Scan(&version)
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'idx_pop_job'`).Scan(&idx)
	if version < 4 || idx != 0 {
		t.Errorf("shard 1 version=%d idx_pop_job=%d, want at least 4 and dropped", version, idx)
	}
}

func TestClient_EnqueueFile(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, content string) string {
		p := filepath.Join(t.TempDir(), "jobs")
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	tests := []struct {
		name     string
		content  string
		want     int
		wantLine int
		wantErr  string
	}{
		{"JSONL", "{\"payload\":{\"a\":1}}\n\n{\"payload\":{\"a\":2},\"priority\":2,\"pagina_id\":3,\"task\":\"t\"}\n", 2, 0, ""},
		{"Array", "[\n {\"payload\":{\"a\":1}},\n {\"payload\":{\"a\":2}, \"max_retries\": 0}\n]", 2, 0, ""},
		{"BadJSONLine", "{\"payload\":{\"a\":1}}\n{\"payload\":\n", 0, 2, "invalid record"},
		{"UnknownKey", "{\"payload\":{}}\n{\"payload\":{}}\n{\"paylod\":{}}\n", 0, 3, "unknown field"},
		{"MissingPayload", "{\"task\":\"t\"}\n", 0, 1, "missing \"payload\""},
		{"PayloadNotObject", "{\"payload\":{}}\n{\"payload\":[1]}\n", 0, 2, "must be a JSON object"},
		{"BadPriority", "{\"payload\":{},\"priority\":5}\n", 0, 1, "invalid priority"},
		{"ArrayBadElement", "[\n {\"payload\":{}},\n\n {\"payload\":7}\n]", 0, 4, "must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{Shards: 2})
			path := write(t, tt.content)
			n, err := b.c.EnqueueFile(b.ctx, path, nil)
			if tt.wantErr == "" {
				if err != nil || n != tt.want {
					t.Fatalf("EnqueueFile = %d, %v; want %d", n, err, tt.want)
				}
				return
			}
			le, ok := err.(*LineError)
			if !ok || le.Line != tt.wantLine || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("EnqueueFile error = %v, want %s:%d: …%s…", err, path, tt.wantLine, tt.wantErr)
			}
			if s, _ := b.c.Stats(b.ctx); s.Pending != 0 {
				t.Errorf("pending after a bad file = %d, want 0 (all or nothing)", s.Pending)
			}
		})
	}
}
