package sqlitestore_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// The killed-producer tests re-run this test binary as the producer.
const (
	childEnv    = "QMSTORE_TEST_CHILD"
	childDirEnv = "QMSTORE_TEST_DIR"
)

func TestMain(m *testing.M) {
	if phase := os.Getenv(childEnv); phase != "" {
		os.Exit(batchChild(os.Getenv(childDirEnv), phase))
	}
	os.Exit(m.Run())
}

// batchChild inserts a batch across three shards and freezes at phase,
// waiting to be killed.
func batchChild(dir, phase string) int {
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Dir: dir, Shards: 3})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	sqlitestore.BatchHook = func(_, p string) {
		if p == phase {
			fmt.Println(p)
			select {} // until killed
		}
	}
	if _, err := st.Insert(context.Background(), batchOf(6, 3)); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("done")
	return 0
}

func batchOf(n, shards int) []store.InsertParams {
	jobs := make([]store.InsertParams, n)
	for i := range jobs {
		jobs[i] = store.InsertParams{Shard: i % shards, Task: "t", MaxAttempts: 2, Now: time.Now().UTC(),
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	return jobs
}

// rowsIn counts every fila row of dir's shard files, staged or not,
// read straight from the files (listings leave staged rows out).
func rowsIn(t *testing.T, dir string, shards int) int {
	t.Helper()
	total := 0
	for i := range shards {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, fmt.Sprintf("shard_%d.db", i))+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = db.QueryRowContext(t.Context(), `SELECT count(*) FROM fila`).Scan(&n)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// TestBatch_StagedRowsNeverShown: while a multi-shard batch is staged (and
// so after one that failed to commit and to clean up, until recovery),
// its rows are in the files but neither listed nor counted, by a
// read-write or a read-only open.
func TestBatch_StagedRowsNeverShown(t *testing.T) {
	// Not parallel: it sets the package's BatchHook.
	dir := t.TempDir()
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3})
	other := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3})
	var checked bool
	sqlitestore.BatchHook = func(_, phase string) {
		if phase != "staged" {
			return
		}
		checked = true
		ro := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3, ReadOnly: true})
		if n := rowsIn(t, dir, 3); n != 9 {
			t.Errorf("staged rows in the files = %d, want 9", n)
		}
		for name, s := range map[string]*sqlitestore.Store{"read-write": other, "read-only": ro} {
			jobs, err := s.Jobs(t.Context(), store.ListParams{Shard: store.AllShards, Limit: 1000})
			if err != nil || len(jobs) != 0 {
				t.Errorf("%s: Jobs = %d jobs, %v; want none while staged", name, len(jobs), err)
			}
			stats, err := s.Stats(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, sh := range stats {
				if sh.Pending+sh.Scheduled+sh.Processing != 0 {
					t.Errorf("%s: shard %d stats %+v, want no staged row counted", name, sh.Shard, sh)
				}
			}
			counts, err := s.JobCounts(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range counts {
				if c.Count != 0 && c.Status != "" {
					t.Errorf("%s: JobCounts has %+v while staged", name, c)
				}
			}
			if b, err := s.TaskBacklog(t.Context()); err != nil || len(b) != 0 {
				t.Errorf("%s: TaskBacklog = %v, %v; want empty", name, b, err)
			}
		}
	}
	t.Cleanup(func() { sqlitestore.BatchHook = nil })
	if _, err := st.Insert(t.Context(), batchOf(9, 3)); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the batch was never staged")
	}
	if jobs, err := other.Jobs(t.Context(), store.ListParams{Shard: store.AllShards, Limit: 1000}); err != nil || len(jobs) != 9 {
		t.Errorf("Jobs after the commit = %d, %v; want 9", len(jobs), err)
	}
}

func claimAll(t *testing.T, st *sqlitestore.Store) []*store.Job {
	t.Helper()
	jobs, err := st.Claim(t.Context(), store.ClaimParams{WorkerID: "w", Max: 1000, Now: time.Now().UTC()})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return jobs
}

func TestBatch_LockedShardStoresNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3, BusyTimeout: 500 * time.Millisecond})
	other := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3, BusyTimeout: 500 * time.Millisecond})
	unlock := lockShard(t, dir, 1)
	done := make(chan error, 1)
	go func() {
		_, err := st.Insert(t.Context(), batchOf(9, 3))
		done <- err
	}()
	// While the batch waits for shard 1, the other shards' jobs must not
	// be claimable.
	var claimed int
	for waiting := true; waiting; {
		select {
		case err := <-done:
			waiting = false
			if err == nil {
				t.Fatal("Insert with shard 1 locked succeeded, want an error")
			}
		default:
		}
		jobs, err := other.Claim(t.Context(), store.ClaimParams{WorkerID: "other", Max: 100, Now: time.Now().UTC(), Order: []int{0, 2}})
		if err != nil {
			t.Fatal(err)
		}
		claimed += len(jobs)
	}
	if claimed > 0 {
		t.Errorf("another worker claimed %d jobs of a batch that then failed, want none", claimed)
	}
	unlock()
	if jobs := claimAll(t, st); len(jobs) != 0 {
		t.Errorf("claimed %d jobs of a failed batch, want none", len(jobs))
	}
	if n := rowsIn(t, dir, 3); n != 0 {
		t.Errorf("%d rows left by a failed batch, want none", n)
	}
}

func TestBatch_InvisibleUntilCommitted(t *testing.T) {
	// Not parallel: it sets the package's BatchHook.
	dir := t.TempDir()
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3})
	other := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3})
	var atStage, atCommit int
	sqlitestore.BatchHook = func(_, phase string) {
		n := len(claimAll(t, other))
		if phase == "staged" {
			atStage = n
		} else {
			atCommit = n
		}
	}
	t.Cleanup(func() { sqlitestore.BatchHook = nil })
	ids, err := st.Insert(t.Context(), batchOf(9, 3))
	if err != nil {
		t.Fatal(err)
	}
	if atStage != 0 || atCommit != 0 {
		t.Errorf("another process claimed %d jobs while staged and %d before publishing, want 0 and 0", atStage, atCommit)
	}
	if jobs := claimAll(t, other); len(jobs) != len(ids) {
		t.Errorf("claimed %d jobs after Insert returned, want %d", len(jobs), len(ids))
	}
}

func TestBatch_FullDisk(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	// 2 MiB: a fresh store's migrations leave about 800 KiB of WAL on 2
	// shards, which grows with each schema version.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 2})
	// Space to free once the disk has filled up.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	jobs := batchOf(40, 2) // 2.5 MiB of payloads on a 2 MiB disk
	for i := range jobs {
		jobs[i].Payload = json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, big))
	}
	_, err := st.Insert(t.Context(), jobs)
	if err == nil {
		t.Fatal("Insert on a full disk succeeded, want an error")
	}
	t.Logf("Insert: %v", err)
	if got := claimAll(t, st); len(got) != 0 {
		t.Errorf("claimed %d jobs of a failed batch, want none", len(got))
	}
	os.Remove(filler)
	if _, err := st.RecoverOrphans(t.Context(), time.Now(), time.Now()); err != nil {
		t.Fatalf("RecoverOrphans: %v", err)
	}
	if n := rowsIn(t, dir, 2); n != 0 {
		t.Errorf("%d rows left by a failed batch after recovery, want none", n)
	}
}

func TestBatch_ProducerKilled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phase string
		want  int // jobs claimable after recovery
	}{
		{"staged", 0},    // no decision: the batch is removed
		{"committed", 6}, // decided: recovery publishes it whole
	} {
		t.Run(tc.phase, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+tc.phase, childDirEnv+"="+dir)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if strings.TrimSpace(line) != tc.phase {
				t.Fatalf("child printed %q, %v; want %q", line, err, tc.phase)
			}
			if tc.phase == "staged" {
				// A live producer's staged rows are invisible to everyone,
				// and another process's Open leaves them alone.
				st := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3})
				if got := claimAll(t, st); len(got) != 0 {
					t.Errorf("claimed %d jobs of an uncommitted batch, want none", len(got))
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			// The next Open settles the dead producer's batch.
			st2 := openStore(t, sqlitestore.Options{Dir: dir, Shards: 3})
			if got := claimAll(t, st2); len(got) != tc.want {
				t.Errorf("claimed %d jobs after the producer died at %s, want %d", len(got), tc.phase, tc.want)
			}
			if n := rowsIn(t, dir, 3); n != tc.want {
				t.Errorf("%d rows stored, want %d (no staged orphans)", n, tc.want)
			}
		})
	}
}
