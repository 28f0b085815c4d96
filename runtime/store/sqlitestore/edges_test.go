package sqlitestore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// lockShard holds the write lock of dir's shard file i through a separate
// connection until the returned function is called.
func lockShard(t *testing.T, dir string, i int) (unlock func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shard_"+itoa(i)+".db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	done := false
	unlock = func() {
		if done {
			return
		}
		done = true
		conn.ExecContext(context.Background(), `ROLLBACK`)
		conn.Close()
		db.Close()
	}
	t.Cleanup(unlock)
	return unlock
}

func itoa(i int) string { return strconv.Itoa(i) }

func openStore(t *testing.T, o sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A claim that waits for the write lock must stamp its heartbeat with the
// time it was written: a stamp from before the wait makes a fresh claim
// look stuck to orphan recovery (the survivor's own jobs recovered under
// load).
func TestClaim_HeartbeatIsWriteTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 1})
	ctx := t.Context()
	now := time.Now().UTC()
	if _, err := st.Insert(ctx, []store.InsertParams{{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: now}}); err != nil {
		t.Fatal(err)
	}
	unlock := lockShard(t, dir, 0)
	asked := time.Now()
	type result struct {
		jobs []*store.Job
		err  error
	}
	res := make(chan result, 1)
	go func() {
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 1, Now: asked.UTC()})
		res <- result{jobs, err}
	}()
	const held = 300 * time.Millisecond
	time.Sleep(held) // the lock holder's work, not synchronisation
	unlock()
	r := <-res
	if r.err != nil || len(r.jobs) != 1 {
		t.Fatalf("Claim = %v, %v; want one job", r.jobs, r.err)
	}
	if got := r.jobs[0].Heartbeat.Sub(asked); got < held-10*time.Millisecond {
		t.Errorf("heartbeat %v after the claim was asked for, want ≥ %v (the time it was written)", got, held)
	}
	// Orphan recovery with a cutoff between the request and the write
	// must not take the job back.
	rec, err := st.RecoverOrphans(ctx, asked.Add(held/2).UTC(), time.Now().UTC())
	if err != nil || rec.Requeued != 0 {
		t.Errorf("RecoverOrphans = %+v, %v; want nothing recovered", rec, err)
	}
}
