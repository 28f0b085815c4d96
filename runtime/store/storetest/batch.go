package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

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
