package sqlitestore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

func TestOpen_ZeroLengthShardIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3})
	if _, err := st.Insert(t.Context(), []store.InsertParams{{Shard: 0, Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := os.Truncate(filepath.Join(dir, "shard_1.db"), 0); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "shard_1.db-wal"))
	os.Remove(filepath.Join(dir, "shard_1.db-shm"))
	for _, shards := range []int{3, 0} {
		if st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: shards}); err == nil {
			st.Close()
			t.Errorf("Open(shards %d) with an empty shard_1.db succeeded, want an error", shards)
		} else if !errors.Is(err, store.ErrNotDatabase) {
			t.Errorf("Open(shards %d) = %v, want ErrNotDatabase", shards, err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "shard_1.db")); err != nil {
		t.Fatal(err)
	}
	for _, shards := range []int{3, 0} {
		if st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: shards}); err == nil {
			st.Close()
			t.Errorf("Open(shards %d) with shard_1.db missing succeeded, want an error", shards)
		}
	}
}

func TestOpen_Modes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 2})
	if _, err := st.Insert(t.Context(), []store.InsertParams{{Shard: 1, Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	check := func(path string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(path), got, want)
		}
	}
	check(dir, 0o700)
	check(filepath.Join(dir, "shard_0.db"), 0o600)
	check(filepath.Join(dir, "shard_1.db"), 0o600)
	check(filepath.Join(dir, "shard_1.db-wal"), 0o600)

	dir2 := filepath.Join(t.TempDir(), "shared")
	openStore(t, sqlitestore.Options{Dir: dir2, Shards: 1, DirMode: 0o750, FileMode: 0o640})
	if fi, err := os.Stat(filepath.Join(dir2, "shard_0.db")); err != nil || fi.Mode().Perm()&^0o640 != 0 {
		t.Errorf("configured file mode: %v, %v; want at most 0640", fi.Mode(), err)
	}
}

// TestOpen_ConcurrentCreationAgrees opens one new directory from two
// openers at once, one with a count and one inferring it.
func TestOpen_ConcurrentCreationAgrees(t *testing.T) {
	t.Parallel()
	for i := range 10 {
		dir := filepath.Join(t.TempDir(), strconv.Itoa(i))
		type res struct {
			n   int
			err error
		}
		out := make(chan res, 2)
		for _, o := range []sqlitestore.Options{{Dir: dir, Shards: 3}, {Dir: dir, DefaultShards: 5}} {
			go func() {
				st, err := sqlitestore.Open(context.Background(), o)
				if err != nil {
					out <- res{0, err}
					return
				}
				out <- res{st.Shards(), nil}
				st.Close()
			}()
		}
		a, b := <-out, <-out
		n, err := sqlitestore.CountShards(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []res{a, b} {
			if r.err == nil && r.n != n {
				t.Errorf("round %d: an opener used %d shards, the directory holds %d", i, r.n, n)
			}
			if r.err != nil && !errors.Is(r.err, store.ErrShardMismatch) {
				t.Errorf("round %d: %v", i, r.err)
			}
		}
		if n != 3 && n != 5 {
			t.Errorf("round %d: directory holds %d shard files, want 3 or 5", i, n)
		}
	}
}

func TestOpen_ReadOnlyFileSystem(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (as another user, chmod 0555 would test the same)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Insert(t.Context(), batchOf(4, 2)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only: %v: %s", err, out)
	}
	ro, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: 2, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open on a read-only file system: %v", err)
	}
	defer ro.Close()
	if jobs, err := ro.Jobs(t.Context(), store.ListParams{Shard: store.AllShards, Limit: 1000}); err != nil || len(jobs) != 4 {
		t.Errorf("listed %d jobs (%v), want 4", len(jobs), err)
	}
	if _, err := ro.Stats(t.Context()); err != nil {
		t.Errorf("Stats: %v", err)
	}
}

// TestOpen_ReadOnlyNotADatabase: a shard file that is not SQLite is
// ErrNotDatabase on a read-only open too, naming the cause.
func TestOpen_ReadOnlyNotADatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 2})
	st.Close()
	for _, f := range []string{"shard_1.db-wal", "shard_1.db-shm"} {
		os.Remove(filepath.Join(dir, f))
	}
	if err := os.WriteFile(filepath.Join(dir, "shard_1.db"), []byte(strings.Repeat("not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: 2, ReadOnly: true})
	if err == nil {
		st.Close()
		t.Fatal("read-only Open of a non-database shard succeeded")
	}
	if !errors.Is(err, store.ErrNotDatabase) || strings.Contains(err.Error(), "%!") {
		t.Errorf("read-only Open = %v, want ErrNotDatabase", err)
	}
}
