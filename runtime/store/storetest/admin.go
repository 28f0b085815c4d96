package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/runtime/store"
)

// testAdminArea runs the Admin area: listings, counts, the worker registry, and use after Close.
func testAdminArea(t *testing.T, s *suite) {
	t.Run("ListingsAndTaskCounts", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 3)
		var ps []store.InsertParams
		for i := range 9 {
			task := "t.A"
			if i%3 == 0 {
				task = "t.B"
			}
			ps = append(ps, store.InsertParams{Shard: i % 3, Task: task, Now: t0.Add(time.Duration(i) * time.Second)})
		}
		in := insert(t, b, ps...)
		got, err := b.st.Jobs(b.ctx, store.ListParams{Shard: store.AllShards, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]store.JobID{in[8], in[7], in[6], in[5]}, ids(got)); diff != "" {
			t.Errorf("Jobs newest first mismatch (-want +got):\n%s", diff)
		}
		got, _ = b.st.Jobs(b.ctx, store.ListParams{Shard: store.AllShards, Task: "t.B"})
		if diff := cmp.Diff([]store.JobID{in[6], in[3], in[0]}, ids(got)); diff != "" {
			t.Errorf("Jobs(task t.B) mismatch (-want +got):\n%s", diff)
		}
		got, _ = b.st.Jobs(b.ctx, store.ListParams{Shard: 1})
		if len(got) != 3 {
			t.Errorf("Jobs(shard 1) = %d jobs, want 3", len(got))
		}
		tc, err := b.st.TaskCounts(b.ctx, "t.A")
		if err != nil || tc[store.StatusPending] != 6 {
			t.Errorf("TaskCounts(t.A) = %v, %v; want 6 pending", tc, err)
		}
		// Several statuses in one listing.
		run := claim(t, b, 1, t0.Add(time.Minute))
		if len(run) != 1 {
			t.Fatalf("claimed %d jobs, want 1", len(run))
		}
		got, err = b.st.Jobs(b.ctx, store.ListParams{Shard: store.AllShards, Statuses: []store.Status{store.StatusProcessing, store.StatusCompleted}})
		if err != nil || len(got) != 1 || got[0].ID != run[0].ID {
			t.Errorf("Jobs(processing or completed) = %v, %v; want the claimed job %d", ids(got), err, run[0].ID)
		}
		got, _ = b.st.Jobs(b.ctx, store.ListParams{Shard: store.AllShards, Status: store.StatusPending, Statuses: []store.Status{store.StatusProcessing}, Limit: 20})
		if len(got) != 9 {
			t.Errorf("Jobs(pending, or processing) = %d jobs, want all 9", len(got))
		}
		got, _ = b.st.Jobs(b.ctx, store.ListParams{Shard: store.AllShards, Statuses: []store.Status{store.StatusFailed, store.StatusScheduled}})
		if len(got) != 0 {
			t.Errorf("Jobs(failed or scheduled) = %v, want none", ids(got))
		}
		has, err := b.st.HasWork(b.ctx)
		if err != nil || !has {
			t.Errorf("HasWork = %v, %v; want true", has, err)
		}
	})

	t.Run("JobCounts", func(t *testing.T) {
		t.Parallel()
		testJobCounts(t, s.setup(t, 2).st)
	})

	t.Run("WorkerRegistry", func(t *testing.T) {
		t.Parallel()
		testWorkerRegistry(t, s.setup(t, 2).st)
	})

	t.Run("UseAfterClose", func(t *testing.T) {
		t.Parallel()
		st := s.open(t, 1)
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ctx := t.Context()
		if _, err := st.Insert(ctx, []store.InsertParams{{Payload: json.RawMessage(`{}`)}}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Insert after Close error = %v, want ErrClosed", err)
		}
		if _, err := st.Claim(ctx, store.ClaimParams{Max: 1}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Claim after Close error = %v, want ErrClosed", err)
		}
		if errs := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: store.NewJobID(0, 1)}}}); !errors.Is(errs[0], store.ErrClosed) {
			t.Errorf("Complete after Close error = %v, want ErrClosed", errs[0])
		}
		if _, err := st.Stats(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Stats after Close error = %v, want ErrClosed", err)
		}
	})
}

// testJobCounts checks JobCounts (jobs and dead letters), TaskBacklog,
// WaitingCount and CreatedAt against the jobs inserted, claimed and failed
// in a two-shard store.
func testJobCounts(t *testing.T, st store.Store) {
	ctx := t.Context()
	p := func(sh int, task string) store.InsertParams {
		return store.InsertParams{Shard: sh, Task: task, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}
	}
	later := p(0, "t.B")
	later.RunAt = t0.Add(time.Hour)
	if _, err := st.Insert(ctx, []store.InsertParams{p(0, "t.A"), p(0, "t.A"), p(0, "t.B"), p(1, "t.A"), p(1, "t.A"), p(1, ""), later}); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 2, Now: t0, Order: []int{1}, Tasks: []string{"t.A"}})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("Claim = %d jobs, %v; want 2", len(claimed), err)
	}
	// One dies: a failed job and a dead-letter row of t.A in shard 1.
	dead := store.FailParams{Lease: store.Lease{ID: claimed[0].ID, Token: claimed[0].Lease}, Error: "boom", ErrorType: "E", Dead: true, Now: t0}
	if errs := st.Fail(ctx, []store.FailParams{dead}); errs[0] != nil {
		t.Fatalf("Fail: %v", errs[0])
	}

	got, err := st.JobCounts(ctx)
	if err != nil {
		t.Fatalf("JobCounts: %v", err)
	}
	want := []store.JobCount{
		{Shard: 0, Task: "t.A", Status: store.StatusPending, Count: 2},
		{Shard: 0, Task: "t.B", Status: store.StatusPending, Count: 1},
		{Shard: 0, Task: "t.B", Status: store.StatusScheduled, Count: 1},
		{Shard: 1, Task: "t.A", Status: store.StatusProcessing, Count: 1},
		{Shard: 1, Task: "t.A", Status: store.StatusFailed, Count: 1},
		{Shard: 1, Task: "t.A", Status: "", Count: 1}, // the dead letter
		{Shard: 1, Task: "", Status: store.StatusPending, Count: 1},
	}
	less := func(a, b store.JobCount) bool {
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		return a.Status < b.Status
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("JobCounts (-want +got):\n%s", diff)
	}
	for _, c := range got {
		if c.IsDeadLetters() != (c.Status == "") {
			t.Errorf("%+v: IsDeadLetters = %v", c, c.IsDeadLetters())
		}
	}

	backlog, err := st.TaskBacklog(ctx)
	if err != nil {
		t.Fatalf("TaskBacklog: %v", err)
	}
	wantBacklog := map[string]store.TaskBacklog{
		"t.A": {Pending: 2},
		"t.B": {Pending: 1, Scheduled: 1},
		"":    {Pending: 1},
	}
	if diff := cmp.Diff(wantBacklog, backlog); diff != "" {
		t.Errorf("TaskBacklog (-want +got):\n%s", diff)
	}
	if n, err := st.WaitingCount(ctx); err != nil || n != 5 {
		t.Errorf("WaitingCount = %d, %v; want 5 (4 pending, 1 scheduled)", n, err)
	}
	at, err := st.CreatedAt(ctx)
	if err != nil {
		t.Fatalf("CreatedAt: %v", err)
	}
	// The store was created by this test, by the host's or the database's
	// clock: allow for skew, but not for a missing or made-up time.
	if now := time.Now(); at.Before(now.Add(-time.Hour)) || at.After(now.Add(time.Hour)) {
		t.Errorf("CreatedAt = %v, want about now (%v)", at, now)
	}

	// Emptied, every count is empty.
	if _, err := st.Purge(ctx, []store.Status{store.StatusPending, store.StatusScheduled, store.StatusProcessing, store.StatusFailed}); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if n, err := st.WaitingCount(ctx); err != nil || n != 0 {
		t.Errorf("WaitingCount after Purge = %d, %v; want 0", n, err)
	}
	if b, err := st.TaskBacklog(ctx); err != nil || len(b) != 0 {
		t.Errorf("TaskBacklog after Purge = %v, %v; want none", b, err)
	}
	if got, err := st.JobCounts(ctx); err != nil || len(got) != 1 || !got[0].IsDeadLetters() {
		t.Errorf("JobCounts after Purge = %+v, %v; want only the dead letter", got, err)
	}
}

// testWorkerRegistry checks WorkerPut, WorkerList and WorkerDelete.
func testWorkerRegistry(t *testing.T, st store.Store) {
	ctx := t.Context()
	a := store.WorkerRecord{ID: "host-a:1", Info: json.RawMessage(`{"pid":1}`),
		StartedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(30 * time.Second)}
	b := store.WorkerRecord{ID: "host-b:2", Info: json.RawMessage(`{"pid":2}`),
		StartedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(10 * time.Second)}
	for _, r := range []store.WorkerRecord{a, b} {
		if err := st.WorkerPut(ctx, r); err != nil {
			t.Fatalf("WorkerPut(%s): %v", r.ID, err)
		}
	}
	list := func(now time.Time) []store.WorkerRecord {
		t.Helper()
		got, err := st.WorkerList(ctx, now)
		if err != nil {
			t.Fatalf("WorkerList: %v", err)
		}
		return got
	}
	if diff := cmp.Diff([]store.WorkerRecord{a, b}, list(t0.Add(time.Second)), cmpJSON); diff != "" {
		t.Errorf("WorkerList (-want +got):\n%s", diff)
	}
	// b's entry lapses; a refresh keeps a's and replaces its info.
	a.Info = json.RawMessage(`{"pid":1,"busy":true}`)
	a.UpdatedAt = t0.Add(20 * time.Second)
	a.ExpiresAt = t0.Add(50 * time.Second)
	if err := st.WorkerPut(ctx, a); err != nil {
		t.Fatalf("WorkerPut refresh: %v", err)
	}
	if diff := cmp.Diff([]store.WorkerRecord{a}, list(t0.Add(40*time.Second)), cmpJSON); diff != "" {
		t.Errorf("WorkerList after refresh (-want +got):\n%s", diff)
	}
	if err := st.WorkerDelete(ctx, a.ID); err != nil {
		t.Fatalf("WorkerDelete: %v", err)
	}
	if err := st.WorkerDelete(ctx, "never-there"); err != nil {
		t.Errorf("WorkerDelete(unknown) = %v, want nil", err)
	}
	if got := list(t0); len(got) != 0 {
		t.Errorf("WorkerList after delete = %v, want none", got)
	}
}

// cmpJSON compares JSON documents by value, not by bytes (stores may
// normalise whitespace and key order, as PostgreSQL's jsonb does).
var cmpJSON = cmp.Comparer(func(x, y json.RawMessage) bool {
	var a, b any
	if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return string(x) == string(y)
	}
	return cmp.Equal(a, b)
})
