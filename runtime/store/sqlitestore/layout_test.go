package sqlitestore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// openLayout opens dir with shards shard files and the layout expectation
// want, closing the store at the end of the test.
func openLayout(t *testing.T, dir string, shards int, want Layout) (*Store, error) {
	t.Helper()
	st, err := Open(t.Context(), Options{Dir: dir, Shards: shards, Layout: want})
	if err == nil {
		t.Cleanup(func() { st.Close() })
	}
	return st, err
}

// hasTrigger reports whether shard i of dir has the trigger name.
func hasTrigger(t *testing.T, dir string, i int, name string) bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, fmt.Sprintf("shard_%d.db", i)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// queueMaxStart runs on shard i of dir the index statement queue-max 0.2.0
// runs whenever it opens a shard file.
func queueMaxStart(t *testing.T, dir string, i int) error {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, fmt.Sprintf("shard_%d.db", i)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`CREATE INDEX IF NOT EXISTS idx_pop_job ON fila(status, next_retry_at, priority DESC, id)`)
	return err
}

func TestLayout_NewDirectoryIsNative(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := openLayout(t, dir, 2, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if st.Layout() != LayoutNative {
		t.Fatalf("new directory: Layout() = %q, want native", st.Layout())
	}
	st.Close()
	if hasTrigger(t, dir, 1, "qm_job_tags_insert") {
		t.Error("a native file has the queue-max layout's tags trigger")
	}
	if err := queueMaxStart(t, dir, 1); err == nil || !strings.Contains(err.Error(), "idx_pop_job") {
		t.Errorf("queue-max's start on a native file: err = %v, want it refused", err)
	}
	if st, err = openLayout(t, dir, 0, LayoutNative); err != nil || st.Layout() != LayoutNative {
		t.Fatalf("reopen asking native: %v, %v", st, err)
	}
	st.Close()
	_, err = openLayout(t, dir, 0, LayoutQueueMax)
	if !errors.Is(err, ErrLayout) {
		t.Fatalf("reopen asking queue-max: err = %v, want ErrLayout", err)
	}
	for _, want := range []string{dir, "native layout", "queuemax migrate --to-queue-max " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestLayout_QueueMaxCompatible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := openLayout(t, dir, 2, LayoutQueueMax)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	st.Close()
	if !hasTrigger(t, dir, 0, "qm_job_tags_insert") {
		t.Error("a queue-max layout file lacks the tags trigger")
	}
	if err := queueMaxStart(t, dir, 0); err != nil {
		t.Errorf("queue-max's start on a queue-max layout file: %v", err)
	}
	// An existing directory keeps its layout when nothing is asked.
	if st, err = openLayout(t, dir, 0, ""); err != nil || st.Layout() != LayoutQueueMax {
		t.Fatalf("reopen: %v, %v; want the queue-max layout", st, err)
	}
	st.Close()
	ro, err := Open(t.Context(), Options{Dir: dir, ReadOnly: true})
	if err != nil || ro.Layout() != LayoutQueueMax {
		t.Fatalf("read-only reopen: %v, %v; want the queue-max layout", ro, err)
	}
	ro.Close()
	_, err = openLayout(t, dir, 0, LayoutNative)
	if !errors.Is(err, ErrLayout) {
		t.Fatalf("reopen asking native: err = %v, want ErrLayout", err)
	}
	for _, want := range []string{dir, "queue-max layout", "--queue-max-compatible", "queuemax migrate --to-native " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestLayout_QueueMaxDirectory: a directory queue-max 0.2.0 wrote (fila,
// no layout record) opens in the queue-max layout, and records it.
func TestLayout_QueueMaxDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shard_0.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(baseSchema + `; INSERT INTO fila (payload) VALUES ('{"n": 1}')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := Open(t.Context(), Options{Dir: dir, ReadOnly: true})
	if err != nil || ro.Layout() != LayoutQueueMax {
		t.Fatalf("read-only Open: %v, %v; want the queue-max layout", ro, err)
	}
	ro.Close()
	if _, err := openLayout(t, dir, 1, LayoutNative); !errors.Is(err, ErrLayout) {
		t.Fatalf("Open asking native: err = %v, want ErrLayout", err)
	}
	st, err := openLayout(t, dir, 1, "")
	if err != nil || st.Layout() != LayoutQueueMax {
		t.Fatalf("Open: %v, %v; want the queue-max layout", st, err)
	}
	st.Close()
	l, err := readLayout(t.Context(), st0(t, dir))
	if err != nil || l != LayoutQueueMax {
		t.Fatalf("recorded layout = %q, %v; want queue-max", l, err)
	}
}

// TestMigrateLayout_QueueMaxDirectory moves a directory queue-max 0.2.0
// wrote, never opened by queuemax (schema version 2, no layout record), to
// the native layout: its schema is brought up to date on the way and its
// job runs.
func TestMigrateLayout_QueueMaxDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shard_0.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(baseSchema + `; INSERT INTO shard_metadata (shard_id, version) VALUES (0, 2);
		INSERT INTO fila (payload) VALUES ('{"n": 1}')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	res, err := MigrateLayout(t.Context(), Options{Dir: dir}, LayoutNative)
	if err != nil || len(res.Converted) != 1 {
		t.Fatalf("MigrateLayout = %+v, %v; want shard 0 converted", res, err)
	}
	st, err := openLayout(t, dir, 1, LayoutNative)
	if err != nil {
		t.Fatalf("Open asking native: %v", err)
	}
	jobs, err := st.Claim(t.Context(), store.ClaimParams{WorkerID: "w", Max: 5, Now: time.Now(), Order: []int{0}, Tasks: []string{""}})
	if err != nil || len(jobs) != 1 || string(jobs[0].Payload) != `{"n": 1}` {
		t.Fatalf("Claim = %v, %v; want queue-max's job", jobs, err)
	}
}

// st0 opens shard 0 of dir for raw reads.
func st0(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shard_0.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestLayout_NativeTags: without the insert trigger, every insert path
// of the native layout writes qm_job_tags itself, exactly the rows the
// trigger would have written.
func TestLayout_NativeTags(t *testing.T) {
	t.Parallel()
	for _, layout := range []Layout{LayoutNative, LayoutQueueMax} {
		t.Run(string(layout), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			st, err := openLayout(t, dir, 1, layout)
			if err != nil {
				t.Fatal(err)
			}
			ctx, now := t.Context(), time.Now()
			job := func(tags ...string) store.InsertParams {
				return store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: now, Tags: tags}
			}
			// One job, a batch of 5 (multi-row chunks), a unique job, a
			// scheduled job, and untagged ones between.
			u := job("u1", "u2")
			u.Unique = &store.UniqueParams{Key: "k", States: []store.Status{store.StatusPending}}
			later := job("later")
			later.RunAt = now.Add(time.Hour)
			batches := [][]store.InsertParams{
				{job("a", "b")},
				{job("c"), job(), job("d", "e", "f"), job("g"), job()},
				{u}, {later}, {job()},
			}
			for _, b := range batches {
				if _, err := st.Insert(ctx, b); err != nil {
					t.Fatalf("Insert: %v", err)
				}
			}
			db := st0(t, dir)
			var want, got string
			if err := db.QueryRow(`SELECT coalesce(group_concat(v, ' '), '') FROM (SELECT f.id || ':' || t.value AS v
				FROM fila f, json_each(f.tags) t ORDER BY 1)`).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow(`SELECT coalesce(group_concat(v, ' '), '') FROM (SELECT job_id || ':' || tag AS v
				FROM qm_job_tags ORDER BY 1)`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want == "" || got != want {
				t.Errorf("qm_job_tags = %q, want %q", got, want)
			}
		})
	}
}

// TestMigrateLayout_BothWays moves a directory holding every kind of row
// to the native layout and back: each time the jobs, their IDs, the
// dead-letter entries and the tags read the same, and the directory
// opens only with the new expectation.
func TestMigrateLayout_BothWays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := openLayout(t, dir, 2, LayoutQueueMax)
	if err != nil {
		t.Fatal(err)
	}
	fillLayoutDir(t, st)
	before := snapshotDir(t, st)
	st.Close()

	for _, to := range []Layout{LayoutNative, LayoutQueueMax} {
		res, err := MigrateLayout(t.Context(), Options{Dir: dir}, to)
		if err != nil {
			t.Fatalf("MigrateLayout(%s): %v", to, err)
		}
		if len(res.Converted) != 2 || len(res.Already) != 0 {
			t.Errorf("MigrateLayout(%s) = %+v, want both shards converted", to, res)
		}
		if res, err := MigrateLayout(t.Context(), Options{Dir: dir}, to); err != nil || len(res.Already) != 2 {
			t.Errorf("MigrateLayout(%s) again = %+v, %v; want both shards already there", to, res, err)
		}
		other := LayoutQueueMax
		if to == LayoutQueueMax {
			other = LayoutNative
		}
		if _, err := openLayout(t, dir, 0, other); !errors.Is(err, ErrLayout) {
			t.Errorf("after the move to %s, Open asking %s: err = %v, want ErrLayout", to, other, err)
		}
		if err := queueMaxStart(t, dir, 1); (err == nil) != (to == LayoutQueueMax) {
			t.Errorf("after the move to %s, queue-max's start: err = %v", to, err)
		}
		st, err := openLayout(t, dir, 0, to)
		if err != nil {
			t.Fatalf("Open after the move to %s: %v", to, err)
		}
		if diff := cmp.Diff(before, snapshotDir(t, st)); diff != "" {
			t.Errorf("after the move to %s (-before +after):\n%s", to, diff)
		}
		st.Close()
	}
}

// fillLayoutDir stores pending, scheduled, completed and dead jobs with
// tags and metadata in every shard of st.
func fillLayoutDir(t *testing.T, st *Store) {
	t.Helper()
	ctx, now := t.Context(), time.Now()
	for sh := range st.Shards() {
		var jobs []store.InsertParams
		for i := range 6 {
			j := store.InsertParams{Shard: sh, Task: "t", Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i)),
				MaxAttempts: 1, Now: now, Tags: []string{"x", fmt.Sprint("t", i)}, Metadata: json.RawMessage(`{"m": 1}`)}
			if i == 5 {
				j.RunAt = now.Add(time.Hour)
			}
			jobs = append(jobs, j)
		}
		if _, err := st.Insert(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 2, Now: now, Order: []int{sh}})
		if err != nil || len(claimed) != 2 {
			t.Fatalf("Claim: %d, %v", len(claimed), err)
		}
		l0 := store.Lease{ID: claimed[0].ID, Token: claimed[0].Lease}
		l1 := store.Lease{ID: claimed[1].ID, Token: claimed[1].Lease}
		if errs := st.Complete(ctx, []store.CompleteParams{{Lease: l0, Result: json.RawMessage(`{"ok": true}`), Now: now}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if errs := st.Fail(ctx, []store.FailParams{{Lease: l1, Error: "boom", ErrorType: "E", Dead: true, Now: now}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
}

type dirSnapshot struct {
	Jobs   []string
	Dead   []string
	Tagged map[string][]store.JobID
}

func snapshotDir(t *testing.T, st *Store) dirSnapshot {
	t.Helper()
	ctx := t.Context()
	jobs, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil {
		t.Fatal(err)
	}
	var s dirSnapshot
	for _, j := range jobs {
		s.Jobs = append(s.Jobs, fmt.Sprintf("%s %s %s %s tags=%v meta=%s result=%s err=%s", j.ID, j.Task, j.Status, j.Payload, j.Tags, j.Metadata, j.Result, j.LastError))
	}
	dead, err := st.DeadLetters(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		s.Dead = append(s.Dead, fmt.Sprintf("%+v", *d))
	}
	s.Tagged = map[string][]store.JobID{}
	for _, tag := range []string{"x", "t0", "t5"} {
		tagged, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards, Tag: tag})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range tagged {
			s.Tagged[tag] = append(s.Tagged[tag], j.ID)
		}
	}
	return s
}

// TestMigrateLayout_RefusesLiveWorkers: a directory where a worker is
// registered as live is not moved; once its entry is gone, it is.
func TestMigrateLayout_RefusesLiveWorkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := openLayout(t, dir, 1, LayoutQueueMax)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.WorkerPut(t.Context(), store.WorkerRecord{ID: "host-1", Info: json.RawMessage(`{}`),
		StartedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	_, err = MigrateLayout(t.Context(), Options{Dir: dir}, LayoutNative)
	if err == nil || !strings.Contains(err.Error(), "1 live worker(s) (host-1") {
		t.Fatalf("MigrateLayout with a live worker: err = %v, want it refused naming the worker", err)
	}
	if err := st.WorkerDelete(t.Context(), "host-1"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := MigrateLayout(t.Context(), Options{Dir: dir}, LayoutNative); err != nil {
		t.Fatalf("MigrateLayout after the worker left: %v", err)
	}
}

// TestLayout_StatusCheck: the native layout's fila has no status CHECK,
// for the writer connection of the store that just created it too; the
// queue-max layout's has queue-max's, and a move restores it.
func TestLayout_StatusCheck(t *testing.T) {
	t.Parallel()
	for _, layout := range []Layout{LayoutNative, LayoutQueueMax} {
		dir := t.TempDir()
		st, err := openLayout(t, dir, 1, layout)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Insert(t.Context(), []store.InsertParams{{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		_, err = st.shards[0].w.ExecContext(t.Context(), `UPDATE fila SET status = 'bogus'`)
		if (err == nil) != (layout == LayoutNative) {
			t.Errorf("%s layout: a status outside the CHECK: err = %v", layout, err)
		}
		if layout == LayoutNative {
			st.shards[0].w.ExecContext(t.Context(), `UPDATE fila SET status = 'pending'`)
		}
		st.Close()
	}
	dir := t.TempDir()
	st, err := openLayout(t, dir, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := MigrateLayout(t.Context(), Options{Dir: dir}, LayoutQueueMax); err != nil {
		t.Fatal(err)
	}
	var def string
	if err := st0(t, dir).QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'fila'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, statusCheck) {
		t.Errorf("after the move to the queue-max layout, fila is %q, want queue-max's CHECK", def)
	}
	if _, err := st0(t, dir).Exec(`INSERT INTO fila (payload, status) VALUES ('{}', 'bogus')`); err == nil {
		t.Error("after the move to the queue-max layout, a bogus status was inserted")
	}
}

// TestLayout_KilledWhileCreating: a new file whose process died after
// recording its layout and before giving it the layout's objects gets them
// at the next Open.
func TestLayout_KilledWhileCreating(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shard_0.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeLayoutRecord(t.Context(), tx, LayoutNative); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := openLayout(t, dir, 1, "")
	if err != nil || st.Layout() != LayoutNative {
		t.Fatalf("Open: %v, %v; want the native layout", st, err)
	}
	if applied, err := layoutApplied(t.Context(), st.shards[0].w, LayoutNative); err != nil || !applied {
		t.Errorf("after Open, the native layout's objects applied = %v, %v", applied, err)
	}
}
