package queuemax

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// queueMaxWrite runs statements on shard i of dir through a connection of
// its own, as queue-max 0.2.0 in another process would.
func queueMaxWrite(t *testing.T, dir string, i int, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, fmt.Sprintf("shard_%d.db", i))+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestQueueMax_DefaultHandlerRunsTasklessJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	setup(t, Config{Dir: dir, Shards: 1}).c.Close()
	// queue-max writes rows without our task column.
	queueMaxWrite(t, dir, 0, `INSERT INTO fila (payload, max_tentativas) VALUES ('{"n": 7}', 4)`)
	got := make(chan string, 1)
	other := Define("t.Other", TaskOptions{}, func(context.Context, echoArgs) error { return nil })
	b := setup(t, Config{Dir: dir, Shards: 1, Handlers: []Handler{other},
		DefaultHandler: func(_ context.Context, j *Job) (any, error) {
			got <- string(j.Payload)
			return nil, nil
		}})
	stop := run(t, b.c)
	select {
	case p := <-got:
		if p != `{"n": 7}` {
			t.Errorf("default handler got payload %s", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the queue-max job did not run with Config.DefaultHandler")
	}
	stop()
	if _, err := Open(t.Context(), Config{Dir: dir, Shards: 1, Handlers: []Handler{{Func: other.Func}},
		DefaultHandler: func(context.Context, *Job) (any, error) { return nil, nil }}); err == nil {
		t.Error("Open with a catch-all handler and a DefaultHandler succeeded, want a ConfigError")
	}
}

func TestQueueMax_FuturePendingIsNotReady(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, Config{Dir: dir, Shards: 1})
	future := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	// After our migration, queue-max keeps retrying jobs pending with a
	// future next_retry_at.
	queueMaxWrite(t, dir, 0, `INSERT INTO fila (payload, next_retry_at, tentativas) VALUES ('{"n": 1}', '`+future+`', 1)`)
	s, err := b.c.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pending != 0 || s.Scheduled != 1 {
		t.Errorf("stats pending=%d scheduled=%d, want 0 and 1", s.Pending, s.Scheduled)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := b.c.WaitIdle(ctx); err != nil {
		t.Errorf("WaitIdle = %v, want nil (the job is not ready for an hour)", err)
	}
}

func TestQueueMax_ReclaimFencesStaleWorker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, Config{Dir: dir, Shards: 1})
	id, err := b.c.Enqueue(b.ctx, "t", echoArgs{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := b.c.Claim(b.ctx, "ours", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	// queue-max recovers the job as an orphan and claims it itself; it
	// never touches the lease column.
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	queueMaxWrite(t, dir, 0,
		`UPDATE fila SET status = 'pending', worker_id = NULL, heartbeat = NULL, next_retry_at = '`+now+`' WHERE status = 'processing'`,
		`UPDATE fila SET status = 'processing', worker_id = 'queue-max-worker', heartbeat = '`+now+`', started_at = '`+now+`',
			tentativas = tentativas + 1 WHERE status = 'pending'`)
	if err := b.c.Heartbeat(b.ctx, jobs[0]); err == nil {
		t.Error("stale heartbeat accepted")
	}
	if err := b.c.Complete(b.ctx, jobs[0], "stale"); err == nil {
		t.Error("stale completion accepted, want ErrLeaseLost")
	}
	if _, err := b.c.Fail(b.ctx, jobs[0], fmt.Errorf("stale")); err == nil {
		t.Error("stale failure accepted, want ErrLeaseLost")
	}
	j, err := b.c.Job(b.ctx, id)
	if err != nil || j.Status != StatusProcessing || j.WorkerID != "queue-max-worker" {
		t.Errorf("job = %+v, %v; want still processing by queue-max", j, err)
	}
}
