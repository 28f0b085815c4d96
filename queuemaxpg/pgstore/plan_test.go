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

	// Small acknowledgements must not read the table; any size must join
	// its input to the jobs linearly (by hash, or by looking each input
	// row up in an index), never loop over the input once per job.
	for _, n := range []int{20, 1000} {
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
		for name, c := range map[string]struct {
			q    string
			args []any
		}{
			"complete":           {s.q.complete, args},
			"complete workflows": {s.q.completeWf, args},
			"heartbeat":          {s.q.heartbeat, []any{now, ids, tokens, workers}},
			"release":            {s.q.release, []any{ids, tokens, workers}},
			"fail": {s.q.fail, []any{ids, tokens, no, make([]int64, n), strs, strs, strs, times,
				counterSlot(), workers, no, no}},
		} {
			plan := explain(t, s.pool, c.q, c.args)
			if strings.Contains(plan, "jobs_heartbeat") || n <= 20 && strings.Contains(plan, "Seq Scan on jobs") {
				t.Errorf("%s of %d: reads every processing row or the whole table:\n%s", name, n, plan)
			}
			if loop := rescans(explainJSON(t, s.pool, c.q, c.args)); loop != "" {
				t.Errorf("%s of %d: a nested loop scans %s once per outer row:\n%s", name, n, loop, plan)
			}
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON); the actual figures are
// those of EXPLAIN ANALYZE.
type planNode struct {
	Type     string     `json:"Node Type"`
	Parent   string     `json:"Parent Relationship"`
	Relation string     `json:"Relation Name"`
	CTE      string     `json:"CTE Name"`
	Plans    []planNode `json:"Plans"`

	ActualRows     float64 `json:"Actual Rows"`
	ActualLoops    float64 `json:"Actual Loops"`
	RemovedFilter  float64 `json:"Rows Removed by Filter"`
	RemovedRecheck float64 `json:"Rows Removed by Index Recheck"`
}

// explainJSON returns the root of the plan PostgreSQL chooses for q.
func explainJSON(t *testing.T, pool *pgxpool.Pool, q string, args []any) planNode {
	t.Helper()
	var out []struct{ Plan planNode }
	if err := pool.QueryRow(t.Context(), "EXPLAIN (FORMAT JSON) "+q, args...).Scan(&out); err != nil || len(out) != 1 {
		t.Fatalf("EXPLAIN (FORMAT JSON): %v", err)
	}
	return out[0].Plan
}

// rescans returns what a nested loop of p rescans in full once per outer
// row (a CTE, a function's output, a materialized or sequentially scanned
// input), or "" if none does.
func rescans(p planNode) string {
	if p.Type == "Nested Loop" {
		for _, c := range p.Plans {
			if c.Parent != "Inner" {
				continue
			}
			switch c.Type {
			case "CTE Scan", "Function Scan", "Materialize", "Seq Scan":
				return c.Type + " " + c.CTE + c.Relation
			}
		}
	}
	for _, c := range p.Plans {
		if r := rescans(c); r != "" {
			return r
		}
	}
	return ""
}
