package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// testUniqueArea runs the Unique area.
func testUniqueArea(t *testing.T, s *suite) {
	t.Run("Insert", func(t *testing.T) {
		t.Parallel()
		testUniqueInsert(t, s.setup(t, 2).st)
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		testUniqueRelease(t, s.setup(t, 1).st)
	})

	t.Run("Retry", func(t *testing.T) {
		t.Parallel()
		testUniqueRetry(t, s.setup(t, 1).st)
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		testUniqueConcurrent(t, s.setup(t, 2).st)
	})
}

// uniqueEnv holds the helpers of the unique-job cases.
type uniqueEnv struct {
	t  *testing.T
	st store.Store
}

var defaultCounted = []store.Status{store.StatusPending, store.StatusScheduled, store.StatusProcessing}

// job returns a unique job of key on shard sh (plain when key is "").
func (e uniqueEnv) job(sh int, key string, states ...store.Status) store.InsertParams {
	p := store.InsertParams{Shard: sh, Task: "t.U", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}
	if key != "" {
		if states == nil {
			states = defaultCounted
		}
		p.Unique = &store.UniqueParams{Key: key, States: states}
	}
	return p
}

// insert inserts jobs and returns their IDs and duplicate flags.
func (e uniqueEnv) insert(jobs ...store.InsertParams) ([]store.JobID, []bool) {
	e.t.Helper()
	ids, err := e.st.Insert(e.t.Context(), jobs)
	if err != nil {
		e.t.Fatalf("Insert: %v", err)
	}
	dups := make([]bool, len(jobs))
	for i, j := range jobs {
		dups[i] = j.Unique != nil && j.Unique.Duplicate
	}
	return ids, dups
}

// one inserts one job and returns its ID and duplicate flag.
func (e uniqueEnv) one(p store.InsertParams) (store.JobID, bool) {
	e.t.Helper()
	ids, dups := e.insert(p)
	return ids[0], dups[0]
}

// claim claims every ready job.
func (e uniqueEnv) claim(now time.Time) []*store.Job {
	e.t.Helper()
	jobs, err := e.st.Claim(e.t.Context(), store.ClaimParams{WorkerID: "w1", Max: 100, Now: now})
	if err != nil {
		e.t.Fatalf("Claim: %v", err)
	}
	return jobs
}

// count returns how many jobs are stored, over every status.
func (e uniqueEnv) count() int {
	e.t.Helper()
	jobs, err := e.st.Jobs(e.t.Context(), store.ListParams{Shard: store.AllShards, Limit: 1000})
	if err != nil {
		e.t.Fatalf("Jobs: %v", err)
	}
	return len(jobs)
}

func (e uniqueEnv) status(id store.JobID) *store.Job {
	e.t.Helper()
	j, err := e.st.Job(e.t.Context(), id)
	if err != nil {
		e.t.Fatalf("Job(%d): %v", id, err)
	}
	return j
}

func lease(j *store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Lease} }

// testUniqueInsert checks the decision itself: a second insert of a key is
// a duplicate carrying the first job's ID, the key is stored, a moves
// between counted statuses (claim, retry, snooze) keeps it held, and a
// batch reports per job without failing or half-storing.
func testUniqueInsert(t *testing.T, st store.Store) {
	e := uniqueEnv{t, st}
	ctx := t.Context()
	first, dup := e.one(e.job(0, "k1"))
	if dup {
		t.Fatalf("first insert of k1 reported Duplicate")
	}
	if got := e.status(first).UniqueKey; got != "k1" {
		t.Errorf("Job.UniqueKey = %q, want k1", got)
	}
	again, dup := e.one(e.job(0, "k1"))
	if !dup || again != first {
		t.Fatalf("second insert of k1 = %d (duplicate %v), want %d (duplicate)", again, dup, first)
	}
	if n := e.count(); n != 1 {
		t.Fatalf("stored %d jobs after a duplicate, want 1", n)
	}
	// Scheduled (a future run-at) counts too.
	later := e.job(0, "k2")
	later.RunAt = t0.Add(time.Hour)
	sched, _ := e.one(later)
	if id, dup := e.one(e.job(0, "k2")); !dup || id != sched {
		t.Errorf("insert of a scheduled job's key = %d (duplicate %v), want %d (duplicate)", id, dup, sched)
	}

	// Processing, then back to scheduled by a retry and by a snooze: the
	// key stays held throughout, and the moves never collide.
	jobs := e.claim(t0)
	if len(jobs) != 1 || jobs[0].ID != first {
		t.Fatalf("claimed %v, want job %d", jobs, first)
	}
	if id, dup := e.one(e.job(0, "k1")); !dup || id != first {
		t.Errorf("insert while processing = %d (duplicate %v), want %d (duplicate)", id, dup, first)
	}
	if err := st.Fail(ctx, []store.FailParams{{Lease: lease(jobs[0]), Error: "x", ErrorType: "x", Snooze: true,
		RetryAt: t0.Add(time.Second), Now: t0}})[0]; err != nil {
		t.Fatalf("Fail(snooze): %v", err)
	}
	if id, dup := e.one(e.job(0, "k1")); !dup || id != first {
		t.Errorf("insert while snoozed = %d (duplicate %v), want %d (duplicate)", id, dup, first)
	}

	// A batch: a plain job, a new key, that key again, an existing key,
	// over two shards (SQLite stages such a batch in two phases).
	shards := min(st.Shards(), 2)
	batch := []store.InsertParams{e.job(shards-1, ""), e.job(0, "k3"), e.job(0, "k3"), e.job(0, "k2"), e.job(shards-1, "k4")}
	ids, dups := e.insert(batch...)
	if diff := cmp.Diff([]bool{false, false, true, true, false}, dups); diff != "" {
		t.Errorf("batch duplicates mismatch (-want +got):\n%s", diff)
	}
	if ids[2] != ids[1] || ids[3] != sched {
		t.Errorf("batch IDs %v: want [2] = [1] and [3] = %d", ids, sched)
	}
	for _, i := range []int{0, 1, 4} {
		if j := e.status(ids[i]); j.Status != store.StatusPending {
			t.Errorf("batch job %d (%d) is %s, want pending", i, ids[i], j.Status)
		}
	}
	if n := e.count(); n != 5 {
		t.Errorf("stored %d jobs, want 5 (k1, k2, the batch's plain job, k3, k4)", n)
	}
	// A batch made only of duplicates stores nothing and is no error.
	if _, dups := e.insert(e.job(0, "k3"), e.job(shards-1, "k4")); !dups[0] || !dups[1] {
		t.Errorf("all-duplicate batch: duplicates %v, want both", dups)
	}
	if n := e.count(); n != 5 {
		t.Errorf("stored %d jobs after an all-duplicate batch, want 5", n)
	}
}

// testUniqueRelease checks that a job frees its key by status: completed
// (even when its row is kept), failed and cancelled free it by default,
// and a status listed among the counted ones keeps it held.
func testUniqueRelease(t *testing.T, st store.Store) {
	e := uniqueEnv{t, st}
	ctx := t.Context()
	run := func(key string, states []store.Status, end func(j *store.Job)) store.JobID {
		t.Helper()
		id, _ := e.one(e.job(0, key, states...))
		jobs := e.claim(t0)
		if len(jobs) != 1 || jobs[0].ID != id {
			t.Fatalf("claimed %d jobs, want job %d", len(jobs), id)
		}
		end(jobs[0])
		return id
	}
	complete := func(j *store.Job) {
		if err := st.Complete(ctx, []store.CompleteParams{{Lease: lease(j), Result: json.RawMessage(`1`), Now: t0}})[0]; err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	dead := func(j *store.Job) {
		if err := st.Fail(ctx, []store.FailParams{{Lease: lease(j), Error: "x", ErrorType: "x", Dead: true, Now: t0}})[0]; err != nil {
			t.Fatalf("Fail(dead): %v", err)
		}
	}
	cancelled := func(j *store.Job) {
		if err := st.Fail(ctx, []store.FailParams{{Lease: lease(j), Error: "x", ErrorType: "x", Cancelled: true, Now: t0}})[0]; err != nil {
			t.Fatalf("Fail(cancelled): %v", err)
		}
	}
	withAll := func(extra store.Status) []store.Status { return append(slices.Clone(defaultCounted), extra) }
	for _, tt := range []struct {
		name   string
		states []store.Status
		end    func(*store.Job)
		status store.Status
		holds  bool
	}{
		{"CompletedFrees", nil, complete, store.StatusCompleted, false},
		{"FailedFrees", nil, dead, store.StatusFailed, false},
		{"CancelledFrees", nil, cancelled, store.StatusCancelled, false},
		{"CompletedCounted", withAll(store.StatusCompleted), complete, store.StatusCompleted, true},
		{"FailedCounted", withAll(store.StatusFailed), dead, store.StatusFailed, true},
		{"CancelledCounted", withAll(store.StatusCancelled), cancelled, store.StatusCancelled, true},
	} {
		key := "rel-" + tt.name
		old := run(key, tt.states, tt.end)
		if j := e.status(old); j.Status != tt.status {
			t.Fatalf("%s: ended job is %s, want %s (its row kept)", tt.name, j.Status, tt.status)
		}
		id, dup := e.one(e.job(0, key, tt.states...))
		if dup != tt.holds || (dup && id != old) || (!dup && id == old) {
			t.Errorf("%s: insert after the job ended = %d (duplicate %v); want duplicate %v of %d", tt.name, id, dup, tt.holds, old)
		}
		if !dup {
			// Leave nothing ready for the next case's claim.
			if _, err := st.Cancel(ctx, id, t0); err != nil {
				t.Fatalf("%s: Cancel: %v", tt.name, err)
			}
		}
	}

	// Cancelling a waiting job frees its key at once.
	w, _ := e.one(e.job(0, "rel-wait"))
	if _, err := st.Cancel(ctx, w, t0); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	id, dup := e.one(e.job(0, "rel-wait"))
	if dup {
		t.Errorf("insert after Cancel of the waiting holder: duplicate of %d, want a new job", id)
	}
	if _, err := st.Cancel(ctx, id, t0); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	// Deleting (Purge) frees it too.
	p, _ := e.one(e.job(0, "rel-purge", withAll(store.StatusCancelled)...))
	if _, err := st.Cancel(ctx, p, t0); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if _, dup := e.one(e.job(0, "rel-purge", withAll(store.StatusCancelled)...)); !dup {
		t.Errorf("cancelled job with cancelled counted: insert was not a duplicate")
	}
	if _, err := st.Purge(ctx, []store.Status{store.StatusCancelled}); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if _, dup := e.one(e.job(0, "rel-purge", withAll(store.StatusCancelled)...)); dup {
		t.Errorf("insert after Purge of the holder was a duplicate")
	}
}

// testUniqueRetry checks that re-queueing failed jobs never violates the
// unique index: a failed job whose key another job now holds runs as a
// plain job (its key dropped); of several failed jobs of one key retried
// together, the oldest keeps it.
func testUniqueRetry(t *testing.T, st store.Store) {
	e := uniqueEnv{t, st}
	ctx := t.Context()
	failOne := func(key string) store.JobID {
		t.Helper()
		id, dup := e.one(e.job(0, key))
		if dup {
			t.Fatalf("insert of %s was a duplicate", key)
		}
		jobs := e.claim(t0)
		if len(jobs) != 1 {
			t.Fatalf("claimed %d, want 1", len(jobs))
		}
		if err := st.Fail(ctx, []store.FailParams{{Lease: lease(jobs[0]), Error: "x", ErrorType: "x", Dead: true, Now: t0}})[0]; err != nil {
			t.Fatalf("Fail: %v", err)
		}
		return id
	}
	// RetryJob while a newer job holds the key.
	old := failOne("r1")
	holder, _ := e.one(e.job(0, "r1"))
	if err := st.RetryJob(ctx, old, t0); err != nil {
		t.Fatalf("RetryJob with the key held: %v", err)
	}
	if j := e.status(old); j.Status != store.StatusPending || j.UniqueKey != "" {
		t.Errorf("retried job: status %s, key %q; want pending without a key", j.Status, j.UniqueKey)
	}
	if id, dup := e.one(e.job(0, "r1")); !dup || id != holder {
		t.Errorf("insert of r1 = %d (duplicate %v), want duplicate of %d", id, dup, holder)
	}
	for _, id := range []store.JobID{old, holder} {
		if _, err := st.Cancel(ctx, id, t0); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
	}
	// RetryJob with the key free keeps it.
	free := failOne("r2")
	if err := st.RetryJob(ctx, free, t0); err != nil {
		t.Fatalf("RetryJob: %v", err)
	}
	if id, dup := e.one(e.job(0, "r2")); !dup || id != free {
		t.Errorf("insert after retry of the free key = %d (duplicate %v), want duplicate of %d", id, dup, free)
	}
	if _, err := st.Cancel(ctx, free, t0); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	// RetryFailed over two failed jobs of one key and a held one.
	a := failOne("r3")
	b := failOne("r3")
	c := failOne("r4")
	h4, _ := e.one(e.job(0, "r4"))
	n, err := st.RetryFailed(ctx, 0, t0)
	if err != nil || n != 3 {
		t.Fatalf("RetryFailed = %d, %v; want 3", n, err)
	}
	keys := map[store.JobID]string{}
	for _, id := range []store.JobID{a, b, c, h4} {
		keys[id] = e.status(id).UniqueKey
	}
	want := map[store.JobID]string{a: "r3", b: "", c: "", h4: "r4"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys after RetryFailed (-want +got):\n%s", diff)
	}
}

// testUniqueConcurrent races single inserts of one key (the group commit
// path) and batches holding it: exactly one job is stored and every caller
// gets its ID.
func testUniqueConcurrent(t *testing.T, st store.Store) {
	e := uniqueEnv{t, st}
	const goroutines, rounds = 8, 5
	for r := range rounds {
		key := fmt.Sprintf("race-%d", r)
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			got  []store.JobID
			news int
		)
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				<-start
				jobs := []store.InsertParams{e.job(0, key)}
				if g%2 == 1 {
					// A batch: a plain job, then the key.
					jobs = []store.InsertParams{e.job(0, ""), e.job(0, key)}
				}
				ids, err := st.Insert(t.Context(), jobs)
				if err != nil {
					t.Errorf("Insert: %v", err)
					return
				}
				last := jobs[len(jobs)-1]
				mu.Lock()
				defer mu.Unlock()
				got = append(got, ids[len(ids)-1])
				if !last.Unique.Duplicate {
					news++
				}
			})
		}
		close(start)
		wg.Wait()
		if news != 1 {
			t.Errorf("round %d: %d inserts stored the key, want 1", r, news)
		}
		if slices.Sort(got); len(slices.Compact(got)) != 1 {
			t.Errorf("round %d: callers got IDs %v, want one", r, got)
		}
	}

	// Batches holding two keys in opposite orders: neither fails (a store
	// that locks per key must not deadlock, or must retry), and each key
	// is stored once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[string]int{}
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				a, b := fmt.Sprintf("pair-%d-a", r), fmt.Sprintf("pair-%d-b", r)
				if g%2 == 1 {
					a, b = b, a
				}
				jobs := []store.InsertParams{e.job(0, a), e.job(0, b)}
				if _, err := st.Insert(t.Context(), jobs); err != nil {
					t.Errorf("Insert of a key pair: %v", err)
					return
				}
				mu.Lock()
				for _, j := range jobs {
					if !j.Unique.Duplicate {
						stored[j.Unique.Key]++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for r := range rounds {
		for _, k := range []string{fmt.Sprintf("pair-%d-a", r), fmt.Sprintf("pair-%d-b", r)} {
			if stored[k] != 1 {
				t.Errorf("key %s stored %d times, want 1", k, stored[k])
			}
		}
	}
}
