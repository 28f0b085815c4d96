package sqlitestore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// Plain acknowledgement rounds (one worker, no result: acklite.go) must
// leave what the per-item statements leave: the same rows (each kept
// row's own completion time), counters and per-item results, with stale
// tokens, a worker that does not hold the leases, and no worker named.
func TestPlainAcksMatchSingleAcks(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, worker := range []string{"w1", "w2", ""} {
		t.Run("worker="+worker, func(t *testing.T) {
			t.Parallel()
			type outcome struct {
				Jobs    []*store.Job
				Stats   []store.ShardStats
				Results []error
			}
			run := func(batched bool) outcome {
				st := openStore(t, sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
				ctx := t.Context()
				const n = 20
				params := make([]store.InsertParams, n)
				for i := range params {
					params[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{"i":1}`), MaxAttempts: 3, Now: t0}
				}
				ids, err := st.Insert(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: n, Now: t0})
				if err != nil || len(jobs) != n {
					t.Fatalf("Claim = %d, %v", len(jobs), err)
				}
				var acks []store.CompleteParams
				for i, j := range jobs {
					tok := j.Lease
					if i%5 == 2 {
						tok++ // a stale token
					}
					acks = append(acks, store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: tok, WorkerID: worker},
						Keep: i%3 != 0, Now: t0.Add(time.Duration(i) * 1234567 * time.Microsecond)})
				}
				var o outcome
				if batched {
					o.Results = st.Complete(ctx, acks)
				} else {
					for _, a := range acks {
						o.Results = append(o.Results, st.Complete(ctx, []store.CompleteParams{a})[0])
					}
				}
				for _, id := range ids {
					if j, err := st.Job(ctx, id); err == nil {
						o.Jobs = append(o.Jobs, j)
					}
				}
				if o.Stats, err = st.Stats(ctx); err != nil {
					t.Fatal(err)
				}
				// Leases are random per claim, and a claim stamps its start
				// (which the average processing time reads) with the time it
				// took: compare everything else.
				for _, j := range o.Jobs {
					j.Lease, j.StartedAt, j.Heartbeat = 0, time.Time{}, time.Time{}
				}
				for i := range o.Stats {
					o.Stats[i].AvgProcessingTime = 0
				}
				return o
			}
			single, batched := run(false), run(true)
			if diff := cmp.Diff(single, batched, cmpErrors); diff != "" {
				t.Errorf("plain batched acknowledgements differ from single ones (-single +batched):\n%s", diff)
			}
			lost := 0
			for _, err := range batched.Results {
				if err != nil {
					lost++
				}
			}
			if want := map[string]int{"w1": 4, "w2": 20, "": 4}[worker]; lost != want {
				t.Errorf("%d items lost their lease, want %d", lost, want)
			}
		})
	}
}
