package sqlitestore_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// TestWorkflow_QueueMaxOnTheSameFile: queue-max 0.2.0, writing the same
// shard file with its own statements (and without recursive triggers),
// never pops a waiting step; its completion (a DELETE) releases the
// dependents in its own transaction; its dead-lettering cancels the
// direct dependents at once, and orphan recovery finishes the cascade.
func TestWorkflow_QueueMaxOnTheSameFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	now := time.Now().UTC()
	step := func(name string, after ...string) store.WorkflowStepParams {
		return store.WorkflowStepParams{Name: name, After: after,
			Job: store.InsertParams{Task: "t", Payload: json.RawMessage(`{"s":"` + name + `"}`), MaxAttempts: 3, Now: now}}
	}
	wf, ids, err := st.InsertWorkflow(ctx, &store.WorkflowParams{Name: "qm", Now: now, Steps: []store.WorkflowStepParams{
		step("a"), step("b", "a"), step("c", "b"), step("d", "c")}})
	if err != nil {
		t.Fatal(err)
	}
	// queue-max's connection: no recursive_triggers.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shard_0.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pop := func() (int64, bool) {
		t.Helper()
		var id int64
		err := db.QueryRow(`SELECT id FROM fila WHERE status = 'pending' AND (next_retry_at IS NULL OR next_retry_at <= ?)
			ORDER BY priority DESC, id LIMIT 1`, now.Add(time.Hour).Format("2006-01-02T15:04:05.000Z")).Scan(&id)
		if err == sql.ErrNoRows {
			return 0, false
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE fila SET status = 'processing', worker_id = 'qm', tentativas = tentativas + 1 WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
		return id, true
	}
	state := func(i int) string {
		t.Helper()
		r, err := st.Workflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		return r.Steps[i].State
	}
	id, ok := pop()
	if !ok || id != ids[0].Seq() {
		t.Fatalf("queue-max popped %d, %v; want step a (%d)", id, ok, ids[0].Seq())
	}
	if id, ok := pop(); ok {
		t.Fatalf("queue-max popped waiting step %d", id)
	}
	// queue-max's complete_job deletes the row.
	if _, err := db.Exec(`DELETE FROM fila WHERE id = ?`, ids[0].Seq()); err != nil {
		t.Fatal(err)
	}
	if s := state(0); s != string(store.StatusCompleted) {
		t.Fatalf("a after queue-max's delete: %s", s)
	}
	id, ok = pop()
	if !ok || id != ids[1].Seq() {
		t.Fatalf("after a completed, queue-max popped %d, %v; want step b", id, ok)
	}
	// queue-max's permanent failure of b.
	if _, err := db.Exec(`UPDATE fila SET status = 'failed', last_error = 'boom', completed_at = ? WHERE id = ?`,
		now.Format("2006-01-02T15:04:05.000Z"), ids[1].Seq()); err != nil {
		t.Fatal(err)
	}
	// c's job is cancelled in queue-max's transaction; without recursive
	// triggers the cascade stops there (c's step still counts as open).
	if j, err := st.Job(ctx, ids[2]); err != nil || j.Status != store.StatusCancelled {
		t.Fatalf("c's job after b failed: %+v, %v; want cancelled", j, err)
	}
	if _, ok := pop(); ok {
		t.Fatal("queue-max popped a step after a failed dependency")
	}
	// Orphan recovery (any of our processes) finishes what queue-max's
	// connection could not cascade.
	if _, err := st.RecoverOrphans(ctx, now.Add(-time.Hour), now); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 4; i++ {
		if s := state(i); s != string(store.StatusCancelled) {
			t.Fatalf("step %d after recovery: %s, want cancelled", i, s)
		}
	}
	r, err := st.Workflow(ctx, wf)
	if err != nil || r.Status != store.WorkflowFailed {
		t.Fatalf("workflow = %+v, %v; want failed", r, err)
	}
}
