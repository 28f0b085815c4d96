package storetest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

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
		Defaults: func(string) (store.Priority, int) { return store.PriorityLow, 1 }})
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
