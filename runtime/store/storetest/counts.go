package storetest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/runtime/store"
)

// testJobCounts checks the optional store.JobCounter against the jobs
// inserted and claimed; stores that do not implement it skip.
func testJobCounts(t *testing.T, st store.Store) {
	jc, ok := st.(store.JobCounter)
	if !ok {
		t.Skip("store does not implement store.JobCounter")
	}
	ctx := t.Context()
	p := func(sh int, task string) store.InsertParams {
		return store.InsertParams{Shard: sh, Task: task, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}
	}
	if _, err := st.Insert(ctx, []store.InsertParams{p(0, "t.A"), p(0, "t.A"), p(0, "t.B"), p(1, "t.A"), p(1, "")}); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	if _, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 1, Now: t0, Order: []int{1}, Tasks: []string{"t.A"}}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	got, err := jc.JobCounts(ctx)
	if err != nil {
		t.Fatalf("JobCounts: %v", err)
	}
	want := []store.JobCount{
		{Shard: 0, Task: "t.A", Status: store.StatusPending, Count: 2},
		{Shard: 0, Task: "t.B", Status: store.StatusPending, Count: 1},
		{Shard: 1, Task: "t.A", Status: store.StatusProcessing, Count: 1},
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
}
