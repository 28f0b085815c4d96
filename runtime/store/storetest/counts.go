package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/runtime/store"
)

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
