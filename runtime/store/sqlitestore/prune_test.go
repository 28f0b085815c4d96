package sqlitestore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// TestPruneInBatches: Prune deletes more kept completed rows than one batch
// holds (it deletes them in several short transactions), and only those
// before the cutoff.
func TestPruneInBatches(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const n = 4500
	ps := make([]store.InsertParams, n+1)
	for i := range ps {
		ps[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}
	}
	if _, err := st.Insert(ctx, ps); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: n + 1, Now: t0})
	if err != nil || len(jobs) != n+1 {
		t.Fatalf("Claim = %d, %v", len(jobs), err)
	}
	acks := make([]store.CompleteParams, len(jobs))
	for i, j := range jobs {
		at := t0
		if i == n {
			at = t0.Add(time.Hour) // after the cutoff: kept
		}
		acks[i] = store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Keep: true, Now: at}
	}
	for _, err := range st.Complete(ctx, acks) {
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := st.Prune(ctx, store.PruneParams{CompletedBefore: t0.Add(time.Minute)})
	if err != nil || res.Jobs != n {
		t.Fatalf("Prune = %+v, %v; want %d jobs", res, err, n)
	}
	if left, _ := st.Jobs(ctx, store.ListParams{Shard: store.AllShards}); len(left) != 1 || left[0].ID != jobs[n].ID {
		t.Errorf("left %d jobs, want only the one finished after the cutoff", len(left))
	}
}
