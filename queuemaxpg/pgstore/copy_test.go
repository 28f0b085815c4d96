package pgstore

import (
	"bytes"
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

// encodeCopy writes the same stream into a reused buffer as into a new
// one, whatever the buffer held before: a larger batch's stream, or a
// smaller one's (then the buffer is too small and replaced).
func TestEncodeCopy_ReusedBuffer(t *testing.T) {
	batch := func(n int) ([]store.InsertParams, []int64) {
		jobs := make([]store.InsertParams, n)
		seqs := make([]int64, n)
		for i := range jobs {
			jobs[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Tags: []string{"a"}}
			seqs[i] = int64(100 + i)
		}
		return jobs, seqs
	}
	cols := copyCols(false)
	bigJobs, bigSeqs := batch(3 * copyMin)
	smallJobs, smallSeqs := batch(copyMin)
	big, small := encodeCopy(nil, cols, bigJobs, bigSeqs), encodeCopy(nil, cols, smallJobs, smallSeqs)
	if got := encodeCopy(encodeCopy(nil, cols, bigJobs, bigSeqs), cols, smallJobs, smallSeqs); !bytes.Equal(got, small) {
		t.Errorf("a small batch into a big batch's buffer: %d bytes, want %d", len(got), len(small))
	}
	if got := encodeCopy(make([]byte, 0, len(small)), cols, bigJobs, bigSeqs); !bytes.Equal(got, big) {
		t.Errorf("a big batch into a small batch's buffer: %d bytes, want %d", len(got), len(big))
	}
}
