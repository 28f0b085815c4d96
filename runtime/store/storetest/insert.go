package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// testInsertArea runs the Insert area: insert stores jobs as given, alone, concurrently and in all-or-nothing batches, with their metadata and per-job options.
func testInsertArea(t *testing.T, s *suite) {
	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 3)
		key := int64(-1)
		got := insert(t, b, store.InsertParams{Shard: 2, Task: "t.A", Payload: json.RawMessage(`{"a":1}`),
			PartitionKey: &key, Priority: store.PriorityHigh, MaxAttempts: 1, RetryDelay: 5 * time.Second})
		if got[0].Shard() != 2 {
			t.Fatalf("Insert ID shard = %d, want 2", got[0].Shard())
		}
		j, err := b.st.Job(b.ctx, got[0])
		if err != nil {
			t.Fatalf("Job: %v", err)
		}
		want := &store.Job{ID: got[0], Shard: 2, Task: "t.A", Payload: json.RawMessage(`{"a":1}`), PartitionKey: &key,
			Status: store.StatusPending, Priority: store.PriorityHigh, MaxAttempts: 1, RetryDelay: 5 * time.Second, CreatedAt: t0, Queue: store.DefaultQueue}
		if diff := cmp.Diff(want, j); diff != "" {
			t.Errorf("Job mismatch (-want +got):\n%s", diff)
		}
		if _, err := b.st.Job(b.ctx, store.NewJobID(1, 999)); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("Job(missing) error = %v, want ErrJobNotFound", err)
		}
		if _, err := b.st.Insert(b.ctx, []store.InsertParams{{Shard: 3, Payload: json.RawMessage(`{}`), Now: t0}}); !errors.Is(err, store.ErrInvalidShard) {
			t.Errorf("Insert(shard 3 of 3) error = %v, want ErrInvalidShard", err)
		}
	})

	// The backoff base resolved at enqueue is stored to the millisecond:
	// the engine reads it back and never recomputes it.
	t.Run("RetryDelayToTheMillisecond", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		delays := []time.Duration{1500 * time.Millisecond, 10 * time.Millisecond, 2 * time.Minute}
		var ps []store.InsertParams
		for _, d := range delays {
			ps = append(ps, store.InsertParams{Task: "t.D", MaxAttempts: 1, RetryDelay: d}) // insert() sets payload and time
		}
		ids := insert(t, b, ps...)
		for i, id := range ids {
			if j, err := b.st.Job(b.ctx, id); err != nil || j.RetryDelay != delays[i] {
				t.Errorf("Job(%d).RetryDelay = %v, %v; want %v", id, j.RetryDelay, err, delays[i])
			}
		}
		for _, j := range claim(t, b, len(delays), t0) {
			if want := delays[slices.Index(ids, j.ID)]; j.RetryDelay != want {
				t.Errorf("claimed job %d: RetryDelay %v, want %v", j.ID, j.RetryDelay, want)
			}
		}
	})

	t.Run("ConcurrentSinglesGroupCommit", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		var mu sync.Mutex
		var all []store.JobID
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 50 {
					id, err := b.st.Insert(b.ctx, []store.InsertParams{{Shard: (g + i) % 2, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}})
					if err != nil {
						t.Errorf("Insert: %v", err)
						return
					}
					mu.Lock()
					all = append(all, id...)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(all)
		if len(slices.Compact(all)) != 800 {
			t.Errorf("distinct IDs = %d, want 800", len(all))
		}
		if s := stats(t, b); s.Pending != 800 {
			t.Errorf("pending = %d, want 800", s.Pending)
		}
	})

	t.Run("BatchAllOrNothing", func(t *testing.T) {
		t.Parallel()
		testBatchAllOrNothing(t, s.setup(t, 3).st)
	})

	t.Run("Metadata", func(t *testing.T) {
		t.Parallel()
		testMetadata(t, s.setup(t, 2).st)
	})

	t.Run("Options", func(t *testing.T) {
		t.Parallel()
		testOptions(t, s.setup(t, 2).st)
	})
}

// testBatchAllOrNothing checks that a batch spanning every shard is stored
// and claimable as a whole, with run-at times kept, and that a batch that
// fails stores nothing.
func testBatchAllOrNothing(t *testing.T, st store.Store) {
	ctx := t.Context()
	n := st.Shards() * 3
	jobs := make([]store.InsertParams, n)
	for i := range jobs {
		jobs[i] = store.InsertParams{Shard: i % st.Shards(), Task: "batch", MaxAttempts: 2, Now: t0,
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	later := t0.Add(time.Hour)
	jobs[n-1].RunAt = later
	ids, err := st.Insert(ctx, jobs)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	if len(ids) != n {
		t.Fatalf("Insert returned %d ids, want %d", len(ids), n)
	}
	for i, id := range ids {
		if id.Shard() != jobs[i].Shard {
			t.Errorf("job %d stored in shard %d, want %d", i, id.Shard(), jobs[i].Shard)
		}
	}
	j, err := st.Job(ctx, ids[n-1])
	if err != nil || j.Status != store.StatusScheduled || !j.NextRetryAt.Equal(later) {
		t.Errorf("run-at job = %+v, %v; want scheduled at %v", j, err, later)
	}
	// Recovery must leave a committed batch alone.
	if _, err := st.RecoverOrphans(ctx, t0, t0); err != nil {
		t.Fatalf("RecoverOrphans: %v", err)
	}
	claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 2 * n, Now: t0})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if len(claimed) != n-1 {
		t.Errorf("claimed %d jobs, want %d (all but the scheduled one)", len(claimed), n-1)
	}
	due, ok, err := st.NextDue(ctx)
	if err != nil || !ok || !due.Equal(later) {
		t.Errorf("NextDue = %v, %v, %v; want %v", due, ok, err, later)
	}

	// A batch with one bad job stores nothing.
	bad := append([]store.InsertParams(nil), jobs...)
	bad[len(bad)/2].Shard = st.Shards()
	if _, err := st.Insert(ctx, bad); !errors.Is(err, store.ErrInvalidShard) {
		t.Errorf("Insert with a shard out of range = %v, want ErrInvalidShard", err)
	}
	all, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards, Limit: 10 * n})
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	if len(all) != n {
		t.Errorf("%d jobs stored after the failed batch, want %d", len(all), n)
	}
}

// testMetadata checks that a job's metadata round-trips through Insert, Job,
// Jobs and Claim, that a job without metadata reads back nil, and that a
// job re-created from its dead letter keeps it.
func testMetadata(t *testing.T, st store.Store) {
	ctx := t.Context()
	meta := json.RawMessage(`{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tenant":"acme"}`)
	ids, err := st.Insert(ctx, []store.InsertParams{
		{Task: "t.M", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Metadata: meta, Now: t0},
		{Task: "t.N", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
	})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	check := func(where string, got []json.RawMessage) {
		t.Helper()
		if diff := cmp.Diff([]json.RawMessage{meta, nil}, got, cmpJSON); diff != "" {
			t.Errorf("%s: metadata (-want +got):\n%s", where, diff)
		}
	}
	var got []json.RawMessage
	for _, id := range ids {
		j, err := st.Job(ctx, id)
		if err != nil {
			t.Fatalf("Job(%d): %v", id, err)
		}
		got = append(got, j.Metadata)
	}
	check("Job", got)

	list, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	byID := map[store.JobID]json.RawMessage{}
	for _, j := range list {
		byID[j.ID] = j.Metadata
	}
	check("Jobs", []json.RawMessage{byID[ids[0]], byID[ids[1]]})

	claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 2, Now: t0})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("Claim = %d jobs, %v; want 2", len(claimed), err)
	}
	byID = map[store.JobID]json.RawMessage{}
	for _, j := range claimed {
		byID[j.ID] = j.Metadata
	}
	check("Claim", []json.RawMessage{byID[ids[0]], byID[ids[1]]})

	// Dead-letter the job with metadata, drop its queue row, and re-create
	// it from the dead letter: the metadata comes back with it.
	for _, j := range claimed {
		if j.ID != ids[0] {
			continue
		}
		errs := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Dead: true, Error: "x", ErrorType: "x", Now: t0}})
		if errs[0] != nil {
			t.Fatalf("Fail: %v", errs[0])
		}
	}
	if _, err := st.Purge(ctx, []store.Status{store.StatusFailed}); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	dl, err := st.DeadLetters(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil || len(dl) != 1 {
		t.Fatalf("DeadLetters = %d, %v; want 1", len(dl), err)
	}
	id, err := st.RequeueDead(ctx, dl[0].Shard, dl[0].ID, store.RequeueParams{Now: t0,
		Fallback: store.TaskDefaults{Priority: store.PriorityLow, MaxAttempts: 1}})
	if err != nil {
		t.Fatalf("RequeueDead: %v", err)
	}
	j, err := st.Job(ctx, id)
	if err != nil {
		t.Fatalf("Job(requeued): %v", err)
	}
	if diff := cmp.Diff(meta, j.Metadata, cmpJSON); diff != "" {
		t.Errorf("re-created job's metadata (-want +got):\n%s", diff)
	}
}

// testOptions checks a job's own timeout and tags: stored by Insert (single
// and batch, over shards), returned by Job, Jobs and Claim, absent (zero,
// nil) on a job without them, and ListParams.Tag selecting exactly the jobs
// with that tag, with the other filters, on every shard or one; a deleted
// job leaves the tag filter.
func testOptions(t *testing.T, st store.Store) {
	ctx := t.Context()
	ins := func(ps ...store.InsertParams) []store.JobID {
		t.Helper()
		for i := range ps {
			ps[i].Payload, ps[i].MaxAttempts, ps[i].Now = json.RawMessage(`{}`), 1, t0
		}
		ids, err := st.Insert(ctx, ps)
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		return ids
	}
	a := ins(store.InsertParams{Shard: 0, Task: "t.A", Timeout: 1500 * time.Millisecond, Tags: []string{"billing", "eu"}})[0]
	batch := ins(
		store.InsertParams{Shard: 0, Task: "t.B", Tags: []string{"eu"}},
		store.InsertParams{Shard: 1, Task: "t.A", Tags: []string{"billing"}, Timeout: time.Hour},
		store.InsertParams{Shard: 1, Task: "t.A"},
	)
	b, c, plain := batch[0], batch[1], batch[2]

	type opt struct {
		Timeout time.Duration
		Tags    []string
	}
	want := map[store.JobID]opt{
		a:     {1500 * time.Millisecond, []string{"billing", "eu"}},
		b:     {0, []string{"eu"}},
		c:     {time.Hour, []string{"billing"}},
		plain: {},
	}
	check := func(where string, jobs []*store.Job) {
		t.Helper()
		got := map[store.JobID]opt{}
		for _, j := range jobs {
			got[j.ID] = opt{j.Timeout, j.Tags}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: timeout and tags (-want +got):\n%s", where, diff)
		}
	}
	var one []*store.Job
	for id := range want {
		j, err := st.Job(ctx, id)
		if err != nil {
			t.Fatalf("Job(%d): %v", id, err)
		}
		one = append(one, j)
	}
	check("Job", one)
	all, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	check("Jobs", all)

	filter := func(p store.ListParams) []store.JobID {
		t.Helper()
		jobs, err := st.Jobs(ctx, p)
		if err != nil {
			t.Fatalf("Jobs(%+v): %v", p, err)
		}
		ids := idsOf(jobs)
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...store.JobID) []store.JobID { slices.Sort(ids); return ids }
	for _, tc := range []struct {
		p    store.ListParams
		want []store.JobID
	}{
		{store.ListParams{Shard: store.AllShards, Tag: "billing"}, sorted(a, c)},
		{store.ListParams{Shard: store.AllShards, Tag: "eu"}, sorted(a, b)},
		{store.ListParams{Shard: store.AllShards, Tag: "bill"}, nil},
		{store.ListParams{Shard: 1, Tag: "billing"}, sorted(c)},
		{store.ListParams{Shard: store.AllShards, Tag: "eu", Task: "t.B"}, sorted(b)},
		{store.ListParams{Shard: store.AllShards, Tag: "billing", Status: store.StatusProcessing}, nil},
		{store.ListParams{Shard: store.AllShards, Tag: "billing", Limit: 1}, nil}, // one of a, c: checked below
	} {
		got := filter(tc.p)
		if tc.p.Limit == 1 {
			if len(got) != 1 || (got[0] != a && got[0] != c) {
				t.Errorf("Jobs(%+v) = %v, want one of %v", tc.p, got, []store.JobID{a, c})
			}
			continue
		}
		if len(got) == 0 {
			got = nil
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Jobs(%+v) (-want +got):\n%s", tc.p, diff)
		}
	}

	claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: t0})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	check("Claim", claimed)

	// Completing c without Keep deletes it: it leaves the tag filter.
	for _, j := range claimed {
		if j.ID == c {
			if err := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"}, Now: t0}})[0]; err != nil {
				t.Fatalf("Complete: %v", err)
			}
		}
	}
	if got := filter(store.ListParams{Shard: store.AllShards, Tag: "billing"}); !slices.Equal(got, []store.JobID{a}) {
		t.Errorf("after deleting job %d: Jobs(tag billing) = %v, want [%d]", c, got, a)
	}
}
