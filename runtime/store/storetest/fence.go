package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// testWorkerFence checks that a lease naming a worker holds only while that
// worker owns the job, in Complete, Fail, Heartbeat and Release.
func testWorkerFence(t *testing.T, st store.Store) {
	ctx := t.Context()
	if _, err := st.Insert(ctx, []store.InsertParams{{Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: t0}}); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 1, Now: t0})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %d jobs, %v; want 1", len(jobs), err)
	}
	j := jobs[0]
	other := store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w2"}
	for name, err := range map[string]error{
		"Complete":  st.Complete(ctx, []store.CompleteParams{{Lease: other, Now: t0}})[0],
		"Fail":      st.Fail(ctx, []store.FailParams{{Lease: other, Dead: true, Error: "x", ErrorType: "x", Now: t0}})[0],
		"Heartbeat": st.Heartbeat(ctx, []store.Lease{other}, t0)[0],
		"Release":   st.Release(ctx, []store.Lease{other})[0],
	} {
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s with the right token but worker w2: error = %v, want ErrLeaseLost", name, err)
		}
	}
	if got, err := st.Job(ctx, j.ID); err != nil || got.Status != store.StatusProcessing || got.WorkerID != "w1" {
		t.Fatalf("after the other worker's calls job = %+v, %v; want untouched, processing by w1", got, err)
	}
	own := store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"}
	if err := st.Heartbeat(ctx, []store.Lease{own}, t0)[0]; err != nil {
		t.Errorf("Heartbeat by the owner: %v", err)
	}
	if err := st.Release(ctx, []store.Lease{own})[0]; err != nil {
		t.Errorf("Release by the owner: %v", err)
	}
	jobs, err = st.Claim(ctx, store.ClaimParams{WorkerID: "w3", Max: 1, Now: t0})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("re-Claim = %d jobs, %v; want 1", len(jobs), err)
	}
	if err := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: jobs[0].Lease, WorkerID: "w3"}, Now: t0}})[0]; err != nil {
		t.Errorf("Complete by the owner: %v", err)
	}
}

// testClaimUnnamedTask checks that the task name "" in ClaimParams.Tasks
// claims jobs stored without a task, and only those.
func testClaimUnnamedTask(t *testing.T, st store.Store) {
	ctx := t.Context()
	ids, err := st.Insert(ctx, []store.InsertParams{
		{Task: "a", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
		{Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
		{Task: "b", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
	})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	claim := func(tasks ...string) []store.JobID {
		t.Helper()
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: t0, Tasks: tasks})
		if err != nil {
			t.Fatalf("Claim(%q): %v", tasks, err)
		}
		var out []store.JobID
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	if diff := cmp.Diff([]store.JobID{ids[1]}, claim("")); diff != "" {
		t.Errorf(`Claim("") (-want +got):\n%s`, diff)
	}
	if diff := cmp.Diff([]store.JobID{ids[2]}, claim("", "b")); diff != "" {
		t.Errorf(`Claim("", "b") (-want +got):\n%s`, diff)
	}
	if got := claim("", "a", "b"); len(got) != 1 || got[0] != ids[0] {
		t.Errorf(`Claim("", "a", "b") = %v, want only %v`, got, ids[0])
	}
}
