package pgstore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/runtime/store"
)

// explain returns the plan PostgreSQL chooses for q on pool, in text.
func explain(t *testing.T, pool *pgxpool.Pool, q string, args []any) string {
	t.Helper()
	rows, err := pool.Query(t.Context(), "EXPLAIN "+q, args...)
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	return b.String()
}

// TestHotPathPlans checks the plans of the claim and acknowledgement
// statements on a table that filled up since it was last analyzed (here:
// never), where the planner's row estimates are guesses: claims must walk
// the claim index in order and stop at their limit rather than read and
// sort every pending row, and acknowledgements must look their rows up by
// primary key rather than join against every processing row.
func TestHotPathPlans(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s, err := Open(t.Context(), Options{DSN: dsn, Schema: pgtest.Schema(t, dsn), MaxConns: 4, HostClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	now := time.Now()
	batch := make([]store.InsertParams, 1000)
	for i := range batch {
		batch[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 3, Now: now}
	}
	for range 30 {
		if _, err := s.Insert(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := s.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 2000, Now: now, Tasks: []string{"t"}})
	if err != nil || len(claimed) != 2000 {
		t.Fatalf("Claim: %d jobs, %v", len(claimed), err)
	}

	for _, tc := range []struct {
		name, index string
		p           store.ClaimParams
	}{
		{"claim", "jobs_claim", store.ClaimParams{WorkerID: "w", Max: 500, Now: now, Tasks: []string{"t"}}},
		{"claim any task", "jobs_claim", store.ClaimParams{WorkerID: "w", Max: 500, Now: now}},
		{"claim per queue", "jobs_claim_queue", store.ClaimParams{WorkerID: "w", Max: 500, Now: now, Tasks: []string{"t"},
			Queues: []store.QueueLimit{{Queue: "default", Max: 400}}}},
	} {
		q, args := s.claimQuery(tc.p, 1, -1, tc.p.Max)
		plan := explain(t, s.claims, q, args)
		if !strings.Contains(plan, "Index Scan using "+tc.index+" on") || strings.Contains(plan, "Bitmap Index Scan on "+tc.index) {
			t.Errorf("%s: the pending rows are not read in %s order:\n%s", tc.name, tc.index, plan)
		}
		if strings.Contains(plan, "JIT:") {
			t.Errorf("%s: JIT-compiled (the unavoidable sort's penalty crosses jit_above_cost):\n%s", tc.name, plan)
		}
	}

	const n = 20
	acks := make([]store.CompleteParams, n)
	leases := make([]store.Lease, n)
	for i := range acks {
		leases[i] = store.Lease{ID: claimed[i].ID, Token: claimed[i].Lease, WorkerID: "w"}
		acks[i] = store.CompleteParams{Lease: leases[i], Keep: true, Now: now}
	}
	_, args := s.completeArgs(acks)
	ids, tokens, workers := leaseArrays(leases, byID(leases))
	times := make([]time.Time, n)
	for i := range times {
		times[i] = now
	}
	no := make([]bool, n)
	strs := make([]string, n)
	checks := map[string]string{
		"complete":  explain(t, s.pool, s.q.complete, args),
		"heartbeat": explain(t, s.pool, s.q.heartbeat, []any{now, ids, tokens, workers}),
		"release":   explain(t, s.pool, s.q.release, []any{ids, tokens, workers}),
		"fail": explain(t, s.pool, s.q.fail, []any{ids, tokens, no, make([]int64, n), strs, strs, strs, times,
			counterSlot(), workers, no, no}),
	}
	for name, plan := range checks {
		if strings.Contains(plan, "jobs_heartbeat") || strings.Contains(plan, "Seq Scan on jobs") {
			t.Errorf("%s: reads every processing row:\n%s", name, plan)
		}
	}
}
