package pgstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/runtime/store"
)

// A claim behind a backlog of jobs it may not take (their queue is paused,
// or at its cap and so skipped) reads a bounded number of rows: it finds
// the one ready job of another queue without stepping over the backlog.
// The rows the statement reads from the jobs table are counted in its
// plan (EXPLAIN ANALYZE), so a walk of the backlog fails here whatever the
// machine's speed.
func TestClaim_BoundedBehindExcludedBacklog(t *testing.T) {
	t.Parallel()
	const backlog = 10000
	dsn := pgtest.DSN(t)
	st, err := Open(t.Context(), Options{DSN: dsn, Schema: pgtest.Schema(t, dsn), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	for done := 0; done < backlog; done += 1000 {
		jobs := make([]store.InsertParams, 1000)
		for i := range jobs {
			jobs[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Queue: "held"}
		}
		if _, err := st.Insert(ctx, jobs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Insert(ctx, []store.InsertParams{{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		paused bool
		p      store.ClaimParams
	}{
		{"paused queue", true, store.ClaimParams{WorkerID: "w", Max: 10}},
		{"skipped queue", false, store.ClaimParams{WorkerID: "w", Max: 10, SkipQueues: []string{"held"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.paused {
				if err := st.QueuePause(ctx, "held", time.Time{}); err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := st.QueueResume(ctx, "held", time.Time{}); err != nil {
						t.Error(err)
					}
				}()
			}
			q, args := st.claimQuery(tc.p, 1, -1, tc.p.Max)
			tx, err := st.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // the claim is undone
			var plan []struct{ Plan planNode }
			if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q, args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			if len(plan) != 1 {
				t.Fatalf("EXPLAIN returned %d plans", len(plan))
			}
			claimed := int(plan[0].Plan.ActualRows)
			read := plan[0].Plan.rowsRead("jobs") - claimed // the update's own
			t.Logf("%d jobs waiting: the claim read %d rows of jobs, claimed %d", backlog, read, claimed)
			if claimed != 1 {
				t.Errorf("claimed %d jobs, want the 1 ready job of the default queue", claimed)
			}
			if read > 100 {
				t.Errorf("the claim read %d rows of jobs behind %d it may not take, want a bounded number (≤ 100)", read, backlog)
			}
		})
	}
}

// rowsRead returns the rows the plan's scans of table read: those they
// returned and those their filters removed, over every loop.
func (n planNode) rowsRead(table string) int {
	total := 0
	if n.Relation == table && n.Type != "ModifyTable" {
		total += int((n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * n.ActualLoops)
	}
	for _, c := range n.Plans {
		total += c.rowsRead(table)
	}
	return total
}
