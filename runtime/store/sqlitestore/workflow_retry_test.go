package sqlitestore_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// TestWorkflow_QueueMaxRequeue: queue-max re-queues a failed step on its
// own connection (no recursive triggers): the step reopens at once; the
// steps its failure cancelled go back to waiting only when orphan recovery
// finishes the reopening; the branch then runs to the end.
func TestWorkflow_QueueMaxRequeue(t *testing.T) {
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
			Job: store.InsertParams{Task: "t", Payload: json.RawMessage(`{"s":"` + name + `"}`), MaxAttempts: 1, Now: now}}
	}
	wf, ids, err := st.InsertWorkflow(ctx, &store.WorkflowParams{Name: "qm", Now: now, Steps: []store.WorkflowStepParams{
		step("a"), step("b", "a"), step("c", "b")}})
	if err != nil {
		t.Fatal(err)
	}
	states := func() []string {
		t.Helper()
		r, err := st.Workflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{r.Status}
		for _, s := range r.Steps {
			out = append(out, s.Name+":"+s.State)
		}
		return out
	}
	want := func(w ...string) {
		t.Helper()
		if got := states(); !slices.Equal(got, w) {
			t.Fatalf("workflow %v, want %v", got, w)
		}
	}
	claimOne := func() *store.Job {
		t.Helper()
		js, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 10, Now: now.Add(time.Second)})
		if err != nil || len(js) != 1 {
			t.Fatalf("Claim = %v, %v; want one job", js, err)
		}
		return js[0]
	}
	j := claimOne()
	if err := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Error: "x", Dead: true, Now: now}})[0]; err != nil {
		t.Fatal(err)
	}
	want("failed", "a:failed", "b:cancelled", "c:cancelled")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shard_0.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE fila SET status = 'pending', tentativas = 0, next_retry_at = NULL WHERE id = ?`, ids[0].Seq()); err != nil {
		t.Fatal(err)
	}
	// b's job went back to waiting in queue-max's transaction, but the
	// trigger that reopens its step could not fire again there.
	want("running", "a:ready", "b:cancelled", "c:cancelled")
	if j, err := st.Job(ctx, ids[1]); err != nil || j.Status != store.StatusScheduled {
		t.Fatalf("b's job after queue-max's re-queue: %+v, %v; want scheduled (waiting)", j, err)
	}
	// a runs again and completes before any recovery: b, still marked
	// cancelled, is not released by it, and the workflow ends (failed).
	complete := func(name string) {
		t.Helper()
		j := claimOne()
		var p struct{ S string }
		if err := json.Unmarshal(j.Payload, &p); err != nil || p.S != name {
			t.Fatalf("claimed %s, want %s", j.Payload, name)
		}
		if err := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Now: now}})[0]; err != nil {
			t.Fatal(err)
		}
	}
	complete("a")
	want("failed", "a:completed", "b:cancelled", "c:cancelled")
	// Recovery reopens b, whose dependency has completed: it is released
	// at once, c waits for it, and the workflow runs again.
	if _, err := st.RecoverOrphans(ctx, now.Add(-time.Hour), now); err != nil {
		t.Fatal(err)
	}
	want("running", "a:completed", "b:ready", "c:waiting")
	for _, name := range []string{"b", "c"} {
		complete(name)
	}
	want("completed", "a:completed", "b:completed", "c:completed")
}
