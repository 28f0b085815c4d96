package pgstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/runtime/store"
)

// A batch written by COPY stores each job exactly as the INSERT statement
// does (every field a caller sets), with ids ascending in input order; a
// batch holding a job that waits for its run-at time, or a unique job,
// takes the INSERT path.
func TestInsertCopy_SameJobsAsInsert(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, host := range []bool{false, true} {
		t.Run(fmt.Sprintf("host=%v", host), func(t *testing.T) {
			st, err := Open(t.Context(), Options{DSN: dsn, Schema: pgtest.Schema(t, dsn), MaxConns: 4, HostClock: host})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := t.Context()
			now := time.Now().UTC().Truncate(time.Microsecond)
			batch := func() []store.InsertParams {
				jobs := make([]store.InsertParams, 2*copyMin)
				for i := range jobs {
					j := store.InsertParams{Task: fmt.Sprintf("t%d", i%3), Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)),
						Priority: store.Priority(i % 3), MaxAttempts: 1 + i%4, RetryDelay: time.Duration(i) * time.Second, Now: now}
					if i%2 == 0 {
						k := int64(i)
						j.PartitionKey = &k
						j.Metadata = json.RawMessage(`{"trace":"x"}`)
						j.Timeout = 1500 * time.Millisecond
						j.Tags = []string{"a", fmt.Sprint("b", i)}
						j.Queue = "q1"
					}
					if i%5 == 0 {
						j.Task = ""
						j.RunAt = now.Add(-time.Second) // due already: still copyable
					}
					jobs[i] = j
				}
				return jobs
			}
			viaCopy := batch()
			if !copyable(viaCopy) {
				t.Fatal("the batch is not copyable")
			}
			copied, err := st.Insert(ctx, viaCopy)
			if err != nil {
				t.Fatal(err)
			}
			viaInsert := batch()
			ids, err := insertWith(ctx, poolQuerier{st}, st.q.insert, viaInsert)
			if err != nil {
				t.Fatal(err)
			}
			for i := range copied {
				if i > 0 && copied[i] <= copied[i-1] {
					t.Fatalf("COPY ids not ascending in input order: %v", copied)
				}
				a, err1 := st.Job(ctx, copied[i])
				b, err2 := st.Job(ctx, ids[i])
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if d := a.CreatedAt.Sub(b.CreatedAt).Abs(); d > time.Minute {
					t.Errorf("job %d: created %v by COPY, %v by INSERT", i, a.CreatedAt, b.CreatedAt)
				}
				ac, bc := *a, *b
				ac.ID, bc.ID, ac.CreatedAt, bc.CreatedAt = 0, 0, time.Time{}, time.Time{}
				if diff := cmp.Diff(bc, ac); diff != "" {
					t.Errorf("job %d: COPY (-insert +copy):\n%s", i, diff)
				}
			}
			later := batch()
			later[7].RunAt = now.Add(time.Hour)
			if copyable(later) {
				t.Error("a batch with a job due later is copyable")
			}
			unique := batch()
			unique[3].Unique = &store.UniqueParams{Key: "k", States: []store.Status{store.StatusPending, store.StatusScheduled, store.StatusProcessing}}
			if copyable(unique) {
				t.Error("a batch with a unique job is copyable")
			}
			if copyable(batch()[:copyMin-1]) {
				t.Error("a batch below copyMin is copyable")
			}
		})
	}
}
