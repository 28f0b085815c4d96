package sqlitestore

import (
	"slices"
	"strings"
	"testing"
)

// TestQueryPlans pins the statements of the hot path and of everything an
// idle Run or a dashboard repeats to their indexes: none may scan the
// whole job table, whose kept finished rows can outnumber the waiting
// ones by far (the idle cost must not grow with them), and the claims
// must walk a claim index in order rather than sort.
//
// Both layouts: the queue-max layout's idx_qm_pop (every pending row,
// for queue-max's own pop) must not draw a claim of ours off its index.
func TestQueryPlans(t *testing.T) {
	for _, layout := range []Layout{LayoutNative, LayoutQueueMax} {
		t.Run(string(layout), func(t *testing.T) { testQueryPlans(t, layout) })
	}
}

func testQueryPlans(t *testing.T, layout Layout) {
	st, err := Open(t.Context(), Options{Dir: t.TempDir(), Shards: 1, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sh := st.shards[0]
	const now = "2026-01-01T00:00:00.000Z"
	// perQueue is how a statement over every queue reads (perQueueSQL):
	// the default queue's jobs in claim order, a skip-scan from one named
	// queue to the next, and each named queue's jobs in claim order.
	perQueue := []string{"SCAN fila USING INDEX idx_qm_ready",
		"SEARCH fila USING COVERING INDEX idx_qm_claim_queue (queue>?)",
		"SEARCH fila USING INDEX idx_qm_claim_queue (queue=?)"}
	tests := []struct {
		name, sql string
		args      []any
		want      []string // plan lines that must appear
	}{
		{"claim", sqlClaim, []any{"w", now, 1, 10}, []string{"SCAN fila USING INDEX idx_qm_ready"}},
		{"claim by tasks", claimSQLFor(2), []any{"w", now, 1, 10, "a", "b"}, []string{"SCAN fila USING INDEX idx_qm_ready"}},
		{"claim by queues", claimQueuesSQL(0, 2, 1), []any{"w", now, 1, 10, "q1", 5, "default", 5},
			[]string{"SEARCH fila USING INDEX idx_qm_claim_queue (queue=?)", "SCAN fila USING INDEX idx_qm_ready"}},
		{"claim, every queue", claimMixedSQL(0, false), []any{"w", now, 1, 10}, perQueue},
		{"claim, every queue, by tasks", claimMixedSQL(2, false), []any{"w", now, 1, 10, "a", "b"}, perQueue},
		{"claim, skipping queues", claimMixedSQL(1, true), []any{"w", now, 1, 10, "a", `["q1"]`}, perQueue},
		{"peek keys", sqlPeekKeys, []any{"$.k", now, "t", nil, 10}, perQueue},
		{"pending heads", sqlPendingHeads, nil, []string{"SCAN fila USING COVERING INDEX idx_qm_ready",
			"SEARCH fila USING COVERING INDEX idx_qm_claim_queue (queue>?)", "SEARCH fila USING COVERING INDEX idx_qm_claim_queue (queue=?)"}},
		{"probe", sqlHasReady, []any{now}, []string{"SCAN fila USING COVERING INDEX idx_qm_ready",
			"SCAN fila USING COVERING INDEX idx_qm_claim_queue"}},
		{"promote", sqlPromote, []any{now}, []string{"SEARCH fila USING COVERING INDEX idx_qm_due (next_retry_at<?)"}},
		{"waiting counts", sqlWaitingCounts, nil, []string{"SCAN fila USING COVERING INDEX idx_heartbeat"}},
		{"finished counts", sqlFinishedCounts, nil, []string{"SEARCH fila USING COVERING INDEX idx_qm_done (status=?)"}},
		{"has work", sqlHasWork, nil, nil},
		{"task backlog", sqlTaskBacklog, nil, nil},
		{"waiting count", sqlWaitingCount, nil, nil},
		{"queue counts", queueCountsSQL("queue"), nil, nil},
		{"prune completed", sqlPruneCompleted, []any{now, 10, now}, []string{"SEARCH fila USING INDEX idx_qm_done (status=? AND completed_at<?)"}},
		{"prune finished", sqlPruneFinished, []any{now}, []string{"SEARCH fila USING INDEX idx_qm_done (status=?)"}},
		{"fence", sqlFence, []any{"[1]"}, nil},
		{"complete", sqlCompleteDeleteSet, []any{`[[1,2,""]]`}, nil},
		{"complete and keep", sqlCompleteKeepSet, []any{`[[1,2,"",null,"x"]]`}, nil},
		{"complete, plain round", sqlCompleteDeleteLite, []any{`{"1":2}`, ""}, []string{"SEARCH f USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"complete and keep, plain round", sqlCompleteKeepLite, []any{`{"1":"2026-01-01T00:00:00.000Z2"}`, ""}, []string{"SEARCH fila USING INTEGER PRIMARY KEY (rowid=?)"}},
	}
	if layout == LayoutQueueMax {
		// queue-max 0.2.0's pop (its behaviour spec, §6.6).
		tests = append(tests, struct {
			name, sql string
			args      []any
			want      []string
		}{"queue-max's pop", `SELECT * FROM fila WHERE status = 'pending' AND (next_retry_at IS NULL OR next_retry_at <= ?)
			ORDER BY priority DESC, id LIMIT 1`, []any{now}, []string{"SCAN fila USING INDEX idx_qm_pop"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := sh.w.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tt.sql, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			if testing.Verbose() {
				t.Logf("%s", text)
			}
			if slices.Contains(plan, "SCAN fila") {
				t.Errorf("scans the whole job table:\n%s", text)
			}
			for _, w := range tt.want {
				if !slices.Contains(plan, w) {
					t.Errorf("plan lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

// TestClaimIndexesDisjoint: every pending row is in exactly one claim
// index, the default queue's in idx_qm_ready and a named queue's in
// idx_qm_claim_queue, so that a claim leaving a paused or capped queue
// out reads none of its jobs (the claim over every queue walks each
// queue's run of its own index; TestQueryPlans checks that it does).
// With idx_qm_ready holding every queue, the default queue's walk steps
// over every job of a paused named queue ahead of it in claim order.
func TestClaimIndexesDisjoint(t *testing.T) {
	st, err := Open(t.Context(), Options{Dir: t.TempDir(), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, want := range map[string]string{
		"idx_qm_ready":       "WHERE status = 'pending' AND queue = 'default'",
		"idx_qm_claim_queue": "WHERE status = 'pending' AND queue <> 'default'",
	} {
		var text string
		if err := st.shards[0].r.QueryRowContext(t.Context(), `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`, name).Scan(&text); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.HasSuffix(text, want) {
			t.Errorf("%s is %q, want its predicate %q", name, text, want)
		}
	}
}
