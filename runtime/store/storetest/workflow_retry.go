package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testWorkflowRetryArea runs the cases of RetryWorkflow, re-queued steps
// and ClaimWorkflowEnds.
func testWorkflowRetryArea(t *testing.T, s *suite) {
	cases := []struct {
		name string
		run  func(t *testing.T, w *wfBundle)
	}{
		{"RetryWorkflow", testWorkflowRetry},
		{"RetryWorkflowErrors", testWorkflowRetryErrors},
		{"RetryCancelled", testWorkflowRetryCancelled},
		{"RetryJobReopensBranch", testWorkflowRetryJob},
		{"ClaimEndsOnce", testWorkflowClaimEnds},
		{"FailureCascadesIntoFanIn", testWorkflowFanInCascade},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.setup(t, 2)
			c.run(t, &wfBundle{testBundle: b, ws: b.st})
		})
	}
}

// states returns "name:state" of every step, in order.
func (w *wfBundle) states(t *testing.T, id int64) (string, []string) {
	t.Helper()
	r, _ := w.info(t, id)
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Name+":"+s.State)
	}
	return r.Status, out
}

func (w *wfBundle) wantStates(t *testing.T, id int64, status string, want ...string) {
	t.Helper()
	got, steps := w.states(t, id)
	if got != status || !slices.Equal(steps, want) {
		t.Fatalf("workflow %s %v, want %s %v", got, steps, status, want)
	}
}

func (w *wfBundle) claimEnds(t *testing.T, ids ...int64) []string {
	t.Helper()
	p := store.ClaimEndsParams{IDs: ids}
	got, err := w.ws.ClaimWorkflowEnds(w.ctx, p)
	if err != nil {
		t.Fatalf("ClaimWorkflowEnds: %v", err)
	}
	var out []string
	for _, r := range got {
		out = append(out, r.Name+":"+r.Status)
	}
	return out
}

// testWorkflowRetry: a failed workflow reopens; the failed step runs
// again with fresh attempts, the steps it cancelled wait again and take
// the new result, completed steps stay completed and do not run again.
func testWorkflowRetry(t *testing.T, w *wfBundle) {
	id, jobs := w.insert(t, "pay",
		wfStep("a", nil, nil),
		wfStep("b", nil, nil),
		wfStep("c", []string{"a", "b"}, nil, store.WorkflowBind{Param: "from_a", From: "a"}),
		wfStep("d", []string{"c"}, nil),
		wfStep("audit", nil, []string{"a"}),
	)
	got := w.claimExactly(t, "a", "b")
	w.complete(t, got["b"], `"b1"`)
	w.fail(t, got["a"], false)
	au := w.claimExactly(t, "audit")
	w.complete(t, au["audit"], "")
	w.wantStates(t, id, store.WorkflowFailed, "a:failed", "b:completed", "c:cancelled", "d:cancelled", "audit:completed")
	if got := w.claimEnds(t); !slices.Equal(got, []string{"pay:failed"}) {
		t.Fatalf("ClaimWorkflowEnds = %v, want the failed end", got)
	}

	n, err := w.ws.RetryWorkflow(w.ctx, id, t0)
	if err != nil || n != 3 {
		t.Fatalf("RetryWorkflow = %d, %v; want 3 steps reopened", n, err)
	}
	w.wantStates(t, id, store.WorkflowRunning, "a:ready", "b:completed", "c:waiting", "d:waiting", "audit:completed")
	if r, _ := w.info(t, id); !r.FinishedAt.IsZero() {
		t.Fatalf("reopened workflow keeps FinishedAt %v", r.FinishedAt)
	}
	if j, err := w.st.Job(w.ctx, jobs["a"]); err != nil || j.Status != store.StatusPending || j.Attempts != 0 {
		t.Fatalf("Job(a) after retry = %+v, %v; want pending with no attempts spent", j, err)
	}
	if got := w.claimEnds(t); got != nil {
		t.Fatalf("ClaimWorkflowEnds of a running workflow = %v", got)
	}
	a := w.claimExactly(t, "a")
	w.complete(t, a["a"], `"a2"`)
	c := w.claimExactly(t, "c")
	var p map[string]any
	if err := json.Unmarshal(c["c"].Payload, &p); err != nil || p["from_a"] != "a2" {
		t.Fatalf("c's payload %s, want a's new result bound", c["c"].Payload)
	}
	w.complete(t, c["c"], "")
	d := w.claimExactly(t, "d")
	w.complete(t, d["d"], "")
	w.wantStates(t, id, store.WorkflowCompleted, "a:completed", "b:completed", "c:completed", "d:completed", "audit:completed")
	if got := w.finishedBy(t, jobs["d"]); !slices.Equal(got, []string{"pay:completed"}) {
		t.Fatalf("FinishedBy(d) = %v", got)
	}
	if got := w.claimEnds(t); !slices.Equal(got, []string{"pay:completed"}) {
		t.Fatalf("ClaimWorkflowEnds after the retried run = %v, want its end", got)
	}
	if res, err := w.ws.StepResult(w.ctx, jobs["d"], "a"); err != nil || string(res.Result) != `"a2"` {
		t.Fatalf("StepResult(a) = %+v, %v", res, err)
	}
}

// testWorkflowRetryErrors: running, completed and unknown workflows.
func testWorkflowRetryErrors(t *testing.T, w *wfBundle) {
	if _, err := w.ws.RetryWorkflow(w.ctx, int64(store.NewJobID(1, 999)), t0); !errors.Is(err, store.ErrWorkflowNotFound) {
		t.Fatalf("RetryWorkflow(unknown) = %v, want ErrWorkflowNotFound", err)
	}
	id, _ := w.insert(t, "one", wfStep("a", nil, nil))
	if _, err := w.ws.RetryWorkflow(w.ctx, id, t0); !errors.Is(err, store.ErrWorkflowNotRetryable) {
		t.Fatalf("RetryWorkflow(running) = %v, want ErrWorkflowNotRetryable", err)
	}
	a := w.claimExactly(t, "a")
	w.complete(t, a["a"], "")
	if _, err := w.ws.RetryWorkflow(w.ctx, id, t0); !errors.Is(err, store.ErrWorkflowNotRetryable) {
		t.Fatalf("RetryWorkflow(completed) = %v, want ErrWorkflowNotRetryable", err)
	}
	w.wantStates(t, id, store.WorkflowCompleted, "a:completed")
}

// testWorkflowRetryCancelled: a cancelled workflow runs its cancelled
// steps again in order.
func testWorkflowRetryCancelled(t *testing.T, w *wfBundle) {
	id, _ := w.insert(t, "c",
		wfStep("a", nil, nil),
		wfStep("b", []string{"a"}, nil),
		wfStep("c", []string{"b"}, nil),
	)
	a := w.claimExactly(t, "a")
	w.complete(t, a["a"], "")
	if fin, err := w.ws.CancelWorkflow(w.ctx, id, t0.Add(3*time.Second)); err != nil || !fin {
		t.Fatalf("CancelWorkflow = %v, %v", fin, err)
	}
	w.wantStates(t, id, store.WorkflowCancelled, "a:completed", "b:cancelled", "c:cancelled")
	if n, err := w.ws.RetryWorkflow(w.ctx, id, t0); err != nil || n != 2 {
		t.Fatalf("RetryWorkflow = %d, %v; want 2", n, err)
	}
	w.wantStates(t, id, store.WorkflowRunning, "a:completed", "b:ready", "c:waiting")
	b := w.claimExactly(t, "b")
	w.complete(t, b["b"], "")
	c := w.claimExactly(t, "c")
	w.complete(t, c["c"], "")
	w.wantStates(t, id, store.WorkflowCompleted, "a:completed", "b:completed", "c:completed")
}

// testWorkflowRetryJob: re-queueing one failed step's job (RetryJob, then
// RequeueDead) reopens that step and the branch it cancelled, but not a
// dependent that another failed step still blocks.
func testWorkflowRetryJob(t *testing.T, w *wfBundle) {
	id, jobs := w.insert(t, "branch",
		wfStep("a", nil, nil),
		wfStep("x", nil, nil),
		wfStep("b", []string{"a"}, nil),
		wfStep("c", []string{"b"}, nil),
		wfStep("y", []string{"x"}, nil),
		wfStep("z", []string{"a", "x"}, nil),
	)
	got := w.claimExactly(t, "a", "x")
	w.fail(t, got["a"], false)
	w.fail(t, got["x"], false)
	w.wantStates(t, id, store.WorkflowFailed, "a:failed", "x:failed", "b:cancelled", "c:cancelled", "y:cancelled", "z:cancelled")
	if err := w.st.RetryJob(w.ctx, jobs["a"], t0); err != nil {
		t.Fatalf("RetryJob(a): %v", err)
	}
	w.wantStates(t, id, store.WorkflowRunning, "a:ready", "x:failed", "b:waiting", "c:waiting", "y:cancelled", "z:cancelled")
	a := w.claimExactly(t, "a")
	w.complete(t, a["a"], "")
	b := w.claimExactly(t, "b")
	w.complete(t, b["b"], "")
	c := w.claimExactly(t, "c")
	w.complete(t, c["c"], "")
	w.wantStates(t, id, store.WorkflowFailed, "a:completed", "x:failed", "b:completed", "c:completed", "y:cancelled", "z:cancelled")
	if got := w.finishedBy(t, jobs["c"]); !slices.Equal(got, []string{"branch:failed"}) {
		t.Fatalf("FinishedBy(c) = %v", got)
	}
	// Then the other branch, through its dead-letter row: z now has both
	// dependencies.
	dls, err := w.st.DeadLetters(w.ctx, store.ListParams{Shard: store.AllShards})
	if err != nil {
		t.Fatalf("DeadLetters: %v", err)
	}
	var requeued bool
	for _, dl := range dls {
		if dl.OriginalJobID == jobs["x"] {
			id, err := w.st.RequeueDead(w.ctx, dl.Shard, dl.ID, store.RequeueParams{Now: t0,
				Fallback: store.TaskDefaults{Priority: store.PriorityLow, MaxAttempts: 1}})
			if err != nil || id != jobs["x"] {
				t.Fatalf("RequeueDead(x) = %d, %v; want its job %d back", id, err, jobs["x"])
			}
			requeued = true
		}
	}
	if !requeued {
		t.Fatalf("no dead-letter row for x among %d", len(dls))
	}
	w.wantStates(t, id, store.WorkflowRunning, "a:completed", "x:ready", "b:completed", "c:completed", "y:waiting", "z:waiting")
	x := w.claimExactly(t, "x")
	w.complete(t, x["x"], "")
	yz := w.claimExactly(t, "y", "z")
	w.complete(t, yz["y"], "")
	w.complete(t, yz["z"], "")
	w.wantStates(t, id, store.WorkflowCompleted, "a:completed", "x:completed", "b:completed", "c:completed", "y:completed", "z:completed")
}

// testWorkflowClaimEnds: each end is claimed once, by IDs or by a sweep,
// and only ended workflows are.
func testWorkflowClaimEnds(t *testing.T, w *wfBundle) {
	one, _ := w.insert(t, "one", wfStep("a", nil, nil))
	two, _ := w.insert(t, "two", wfStep("b", nil, nil))
	got := w.claimExactly(t, "a", "b")
	if ends := w.claimEnds(t); ends != nil {
		t.Fatalf("ClaimWorkflowEnds before any end = %v", ends)
	}
	w.complete(t, got["a"], "")
	w.fail(t, got["b"], false)
	if ends := w.claimEnds(t, one); !slices.Equal(ends, []string{"one:completed"}) {
		t.Fatalf("ClaimWorkflowEnds(one) = %v", ends)
	}
	if ends := w.claimEnds(t, one); ends != nil {
		t.Fatalf("ClaimWorkflowEnds(one) again = %v, want nothing", ends)
	}
	if ends := w.claimEnds(t); !slices.Equal(ends, []string{"two:failed"}) {
		t.Fatalf("sweep = %v, want two's end only", ends)
	}
	if ends := w.claimEnds(t, one, two); ends != nil {
		t.Fatalf("ClaimWorkflowEnds after both claimed = %v", ends)
	}
}

// testWorkflowFanInCascade: a step after both a failed step and a step
// that the failure cancelled is cancelled too, and the workflow ends (on
// SQLite it stayed waiting, the workflow running for ever: the cascade's
// count-off was lost).
func testWorkflowFanInCascade(t *testing.T, w *wfBundle) {
	id, jobs := w.insert(t, "fan-in",
		wfStep("a", nil, nil),
		wfStep("b", []string{"a"}, nil),
		wfStep("c", []string{"a", "b"}, nil),
		wfStep("d", nil, []string{"c"}),
	)
	a := w.claimExactly(t, "a")
	w.fail(t, a["a"], false)
	d := w.claimExactly(t, "d")
	w.wantStates(t, id, store.WorkflowRunning, "a:failed", "b:cancelled", "c:cancelled", "d:ready")
	w.complete(t, d["d"], "")
	w.wantStates(t, id, store.WorkflowFailed, "a:failed", "b:cancelled", "c:cancelled", "d:completed")
	if got := w.finishedBy(t, jobs["d"]); !slices.Equal(got, []string{"fan-in:failed"}) {
		t.Fatalf("FinishedBy(d) = %v", got)
	}
	if n, err := w.ws.RetryWorkflow(w.ctx, id, t0); err != nil || n != 3 {
		t.Fatalf("RetryWorkflow = %d, %v; want 3", n, err)
	}
	w.wantStates(t, id, store.WorkflowRunning, "a:ready", "b:waiting", "c:waiting", "d:completed")
	a = w.claimExactly(t, "a")
	w.complete(t, a["a"], "")
	b := w.claimExactly(t, "b")
	w.complete(t, b["b"], "")
	c := w.claimExactly(t, "c")
	w.complete(t, c["c"], "")
	w.claimExactly(t)
	w.wantStates(t, id, store.WorkflowCompleted, "a:completed", "b:completed", "c:completed", "d:completed")
}
