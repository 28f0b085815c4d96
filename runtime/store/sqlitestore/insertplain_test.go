package sqlitestore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// A batch of plain jobs (written by the plain multi-row insert) must store
// the rows that one-at-a-time inserts (the general statement) store, and
// a batch mixing plain and other jobs must store each job as given.
func TestPlainInsertMatchesSingleInsert(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	key := int64(5)
	params := func(mixed bool) []store.InsertParams {
		ps := make([]store.InsertParams, 70) // a chunk of 64, then smaller ones
		for i := range ps {
			ps[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{"i":"` + string(rune('a'+i%26)) + `"}`),
				Priority: store.Priority(i % 3), MaxAttempts: 1 + i%4, RetryDelay: time.Duration(i) * time.Second,
				Now: t0.Add(time.Duration(i) * time.Millisecond), Shard: 1}
			if i%9 == 0 {
				ps[i].Task = "" // NULL task, as queue-max writes it
			}
			if !mixed {
				continue
			}
			switch i % 7 {
			case 1:
				ps[i].Tags = []string{"x"}
			case 2:
				ps[i].RunAt = ps[i].Now.Add(time.Hour)
			case 3:
				ps[i].Metadata = json.RawMessage(`{"m":1}`)
			case 4:
				ps[i].Queue = "q"
			case 5:
				ps[i].PartitionKey, ps[i].Timeout = &key, time.Second
			}
		}
		return ps
	}
	for _, mixed := range []bool{false, true} {
		stored := func(batched bool) []*store.Job {
			st := openStore(t, sqlitestore.Options{Dir: t.TempDir(), Shards: 2})
			ctx := t.Context()
			ps := params(mixed)
			var ids []store.JobID
			if batched {
				var err error
				if ids, err = st.Insert(ctx, ps); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, p := range ps {
					id, err := st.Insert(ctx, []store.InsertParams{p})
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, id...)
				}
			}
			var jobs []*store.Job
			for _, id := range ids {
				j, err := st.Job(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, j)
			}
			return jobs
		}
		single, batched := stored(false), stored(true)
		// Both ways write plain jobs with the plain statements: check
		// each row against what it was given too.
		for i, p := range params(mixed) {
			j := single[i]
			status := store.StatusPending
			if p.RunAt.After(p.Now) {
				status = store.StatusScheduled
			}
			got := []any{j.Task, string(j.Payload), j.Priority, j.MaxAttempts, j.RetryDelay, j.CreatedAt, j.Status,
				j.Attempts, j.Shard, j.Queue, j.Tags, string(j.Metadata), j.PartitionKey, j.Timeout}
			want := []any{p.Task, string(p.Payload), p.Priority, p.MaxAttempts, p.RetryDelay, p.Now, status,
				0, 1, store.QueueOf(p.Queue), p.Tags, string(p.Metadata), p.PartitionKey, p.Timeout}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mixed=%v: job %d stored (-given +stored):\n%s", mixed, i, diff)
			}
		}
		if diff := cmp.Diff(single, batched); diff != "" {
			t.Errorf("mixed=%v: batched rows differ from single inserts (-single +batched):\n%s", mixed, diff)
		}
		if j := batched[2]; mixed && j.Status != store.StatusScheduled {
			t.Errorf("job 2 (RunAt in an hour) is %s, want scheduled", j.Status)
		}
	}
}
