package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testWorkflowArea runs the Workflow area (stores that implement
// store.WorkflowStore).
func testWorkflowArea(t *testing.T, s *suite) {
	cases := []struct {
		name string
		run  func(t *testing.T, w *wfBundle)
	}{
		{"ReleaseInOrderWithBinding", testWorkflowRelease},
		{"FanOutFanIn", testWorkflowFan},
		{"FailureCascades", testWorkflowFailure},
		{"Cancel", testWorkflowCancel},
		{"Retention", testWorkflowRetention},
		{"StepResult", testWorkflowStepResult},
		{"BatchEnds", testWorkflowBatchEnds}, // workflow_batch.go
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s.setup(t, 2)
			ws := b.st
			c.run(t, &wfBundle{testBundle: b, ws: ws})
		})
	}
}

type wfBundle struct {
	*testBundle
	ws store.WorkflowStore
}

// step builds one step for shard 1 (a workflow lives on one shard).
func wfStep(name string, after []string, settled []string, binds ...store.WorkflowBind) store.WorkflowStepParams {
	return store.WorkflowStepParams{Name: name, After: after, Settled: settled, Binds: binds,
		Job: store.InsertParams{Shard: 1, Task: "wf." + name, Payload: json.RawMessage(`{"step":"` + name + `"}`), MaxAttempts: 1, Now: t0}}
}

func (w *wfBundle) insert(t *testing.T, name string, steps ...store.WorkflowStepParams) (int64, map[string]store.JobID) {
	t.Helper()
	id, ids, err := w.ws.InsertWorkflow(w.ctx, &store.WorkflowParams{Shard: 1, Name: name, Steps: steps, Now: t0})
	if err != nil {
		t.Fatalf("InsertWorkflow: %v", err)
	}
	if store.JobID(id).Shard() != 1 || len(ids) != len(steps) {
		t.Fatalf("InsertWorkflow = %d (shard %d), %d ids; want shard 1, %d ids", id, store.JobID(id).Shard(), len(ids), len(steps))
	}
	m := map[string]store.JobID{}
	for i, st := range steps {
		if ids[i].Shard() != 1 {
			t.Fatalf("step %s stored on shard %d, want 1", st.Name, ids[i].Shard())
		}
		m[st.Name] = ids[i]
	}
	return id, m
}

// claim claims everything ready and returns it by step (the payload's
// "step").
func (w *wfBundle) claim(t *testing.T) map[string]*store.Job {
	t.Helper()
	jobs, err := w.st.Claim(w.ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: t0.Add(time.Second)})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	out := map[string]*store.Job{}
	for _, j := range jobs {
		var p struct{ Step string }
		_ = json.Unmarshal(j.Payload, &p)
		out[p.Step] = j
	}
	return out
}

func names(m map[string]*store.Job) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (w *wfBundle) claimExactly(t *testing.T, want ...string) map[string]*store.Job {
	t.Helper()
	got := w.claim(t)
	slices.Sort(want)
	if !slices.Equal(names(got), want) {
		t.Fatalf("claimed %v, want %v", names(got), want)
	}
	return got
}

func (w *wfBundle) complete(t *testing.T, j *store.Job, result string) {
	t.Helper()
	var r json.RawMessage
	if result != "" {
		r = json.RawMessage(result)
	}
	if err := w.st.Complete(w.ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Result: r, Now: t0.Add(2 * time.Second)}})[0]; err != nil {
		t.Fatalf("Complete(%d): %v", j.ID, err)
	}
}

func (w *wfBundle) fail(t *testing.T, j *store.Job, cancelled bool) {
	t.Helper()
	if err := w.st.Fail(w.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Error: "boom",
		ErrorType: "E", Dead: true, Cancelled: cancelled, Now: t0.Add(2 * time.Second)}})[0]; err != nil {
		t.Fatalf("Fail(%d): %v", j.ID, err)
	}
}

func (w *wfBundle) info(t *testing.T, id int64) (*store.WorkflowRecord, map[string]store.WorkflowStepRecord) {
	t.Helper()
	r, err := w.ws.Workflow(w.ctx, id)
	if err != nil {
		t.Fatalf("Workflow(%d): %v", id, err)
	}
	m := map[string]store.WorkflowStepRecord{}
	for _, s := range r.Steps {
		m[s.Name] = s
	}
	return r, m
}

func (w *wfBundle) finishedBy(t *testing.T, jobs ...store.JobID) []string {
	t.Helper()
	got, err := w.ws.FinishedBy(w.ctx, jobs)
	if err != nil {
		t.Fatalf("FinishedBy: %v", err)
	}
	var out []string
	for _, r := range got {
		out = append(out, r.Name+":"+r.Status)
	}
	return out
}

// testWorkflowRelease: a step is claimable only once every After step
// completed; a bound key takes the dependency's result; the workflow
// completes with its last step, and its end is taken once.
func testWorkflowRelease(t *testing.T, w *wfBundle) {
	id, jobs := w.insert(t, "order",
		wfStep("charge", nil, nil),
		wfStep("ship", []string{"charge"}, nil),
		wfStep("mail", []string{"charge", "ship"}, nil, store.WorkflowBind{Param: "receipt", From: "charge"}),
	)
	r, steps := w.info(t, id)
	if r.Status != store.WorkflowRunning || r.Name != "order" || len(r.Steps) != 3 || r.Steps[0].Name != "charge" {
		t.Fatalf("Workflow = %+v", r)
	}
	if steps["ship"].State != store.StepWaiting || steps["charge"].State != store.StepReady || steps["mail"].JobID != jobs["mail"] {
		t.Fatalf("steps = %+v", steps)
	}
	if !slices.Equal(steps["mail"].After, []string{"charge", "ship"}) || len(steps["mail"].Binds) != 1 {
		t.Fatalf("mail step = %+v", steps["mail"])
	}
	// A waiting step's job is neither claimable nor due.
	if j, err := w.st.Job(w.ctx, jobs["ship"]); err != nil || j.Status != store.StatusScheduled || j.Workflow != id {
		t.Fatalf("Job(ship) = %+v, %v", j, err)
	}
	got := w.claimExactly(t, "charge")
	if got["charge"].Workflow != id {
		t.Fatalf("claimed step's Workflow = %d, want %d", got["charge"].Workflow, id)
	}
	w.claimExactly(t)
	if got := w.finishedBy(t, jobs["charge"]); got != nil {
		t.Fatalf("FinishedBy of a running workflow's step = %v", got)
	}
	w.complete(t, got["charge"], `{"receipt_no":42}`)
	ship := w.claimExactly(t, "ship")
	w.complete(t, ship["ship"], "")
	mail := w.claimExactly(t, "mail")
	var p map[string]any
	if err := json.Unmarshal(mail["mail"].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if rc, _ := p["receipt"].(map[string]any); rc["receipt_no"] != float64(42) || p["step"] != "mail" {
		t.Fatalf("mail payload = %s, want the charge's result under receipt", mail["mail"].Payload)
	}
	w.complete(t, mail["mail"], `"sent"`)
	r, steps = w.info(t, id)
	if r.Status != store.WorkflowCompleted || r.FinishedAt.IsZero() {
		t.Fatalf("Workflow after every step = %+v", r)
	}
	for _, n := range []string{"charge", "ship", "mail"} {
		if steps[n].State != string(store.StatusCompleted) {
			t.Errorf("step %s = %s, want completed", n, steps[n].State)
		}
	}
	if got := w.finishedBy(t, jobs["mail"], jobs["ship"]); !slices.Equal(got, []string{"order:completed"}) {
		t.Fatalf("FinishedBy(the last step) = %v", got)
	}
	if got := w.finishedBy(t, jobs["charge"], jobs["ship"]); got != nil {
		t.Fatalf("FinishedBy(steps that did not end it) = %v, want none", got)
	}
	if n, err := w.ws.WorkflowCounts(w.ctx); err != nil || n[store.WorkflowCompleted] != 1 {
		t.Fatalf("WorkflowCounts = %v, %v", n, err)
	}
}

// testWorkflowFan: many steps after one, one after many.
func testWorkflowFan(t *testing.T, w *wfBundle) {
	steps := []store.WorkflowStepParams{wfStep("root", nil, nil)}
	var mids []string
	for _, n := range []string{"a", "b", "c", "d"} {
		steps = append(steps, wfStep(n, []string{"root"}, nil))
		mids = append(mids, n)
	}
	steps = append(steps, wfStep("join", mids, nil))
	id, _ := w.insert(t, "fan", steps...)
	root := w.claimExactly(t, "root")
	w.complete(t, root["root"], "")
	got := w.claimExactly(t, mids...)
	for i, n := range mids {
		w.complete(t, got[n], "")
		if i < len(mids)-1 {
			w.claimExactly(t)
		}
	}
	join := w.claimExactly(t, "join")
	w.complete(t, join["join"], "")
	if r, _ := w.info(t, id); r.Status != store.WorkflowCompleted {
		t.Fatalf("status %s, want completed", r.Status)
	}
}

// testWorkflowFailure: a dead-lettered step cancels the steps after it,
// transitively, naming it; an AfterSettled step runs anyway; the
// workflow ends failed.
func testWorkflowFailure(t *testing.T, w *wfBundle) {
	id, jobs := w.insert(t, "pay",
		wfStep("a", nil, nil),
		wfStep("b", []string{"a"}, nil),
		wfStep("c", []string{"b"}, nil),
		wfStep("cleanup", nil, []string{"a"}),
	)
	a := w.claimExactly(t, "a")
	w.fail(t, a["a"], false)
	cl := w.claimExactly(t, "cleanup")
	_, steps := w.info(t, id)
	for _, n := range []string{"b", "c"} {
		if steps[n].State != string(store.StatusCancelled) || !strings.Contains(steps[n].Reason, `"`) {
			t.Errorf("step %s = %s (%q), want cancelled naming its dependency", n, steps[n].State, steps[n].Reason)
		}
		if j, err := w.st.Job(w.ctx, jobs[n]); err != nil || j.Status != store.StatusCancelled {
			t.Errorf("Job(%s) = %+v, %v; want cancelled", n, j, err)
		}
	}
	if !strings.Contains(steps["b"].Reason, `step "a" failed`) || !strings.Contains(steps["c"].Reason, `step "b"`) {
		t.Errorf("reasons: b %q, c %q", steps["b"].Reason, steps["c"].Reason)
	}
	if steps["a"].State != string(store.StatusFailed) || steps["a"].Reason != "boom" {
		t.Errorf("step a = %+v", steps["a"])
	}
	if r, _ := w.info(t, id); r.Status != store.WorkflowRunning {
		t.Fatalf("status %s before cleanup ended, want running", r.Status)
	}
	w.complete(t, cl["cleanup"], "")
	if r, _ := w.info(t, id); r.Status != store.WorkflowFailed {
		t.Fatalf("status %s, want failed", r.Status)
	}
	if got := w.finishedBy(t, jobs["cleanup"]); !slices.Equal(got, []string{"pay:failed"}) {
		t.Fatalf("FinishedBy(cleanup) = %v", got)
	}
}

// testWorkflowCancel: CancelWorkflow cancels waiting and ready steps at
// once and asks running ones to stop; the workflow ends cancelled when
// the running step ends.
func testWorkflowCancel(t *testing.T, w *wfBundle) {
	id, jobs := w.insert(t, "c",
		wfStep("run", nil, nil),
		wfStep("ready", nil, nil),
		wfStep("wait", []string{"run"}, nil),
		wfStep("settled", nil, []string{"run"}),
	)
	jobsRun, err := w.st.Claim(w.ctx, store.ClaimParams{WorkerID: "w", Max: 1, Now: t0.Add(time.Second), Tasks: []string{"wf.run"}})
	if err != nil || len(jobsRun) != 1 {
		t.Fatalf("Claim run: %v, %v", jobsRun, err)
	}
	if fin, err := w.ws.CancelWorkflow(w.ctx, id, t0.Add(time.Second)); err != nil || fin {
		t.Fatalf("CancelWorkflow with a running step = %v, %v; want not finished", fin, err)
	}
	_, steps := w.info(t, id)
	for _, n := range []string{"ready", "wait"} {
		if steps[n].State != string(store.StatusCancelled) {
			t.Errorf("step %s = %s, want cancelled", n, steps[n].State)
		}
	}
	if steps["run"].State != store.StepReady {
		t.Errorf("running step = %s, want ready (still running)", steps["run"].State)
	}
	errs := w.st.Heartbeat(w.ctx, []store.Lease{{ID: jobsRun[0].ID, Token: jobsRun[0].Lease, WorkerID: "w"}}, t0.Add(time.Second))
	if !errors.Is(errs[0], store.ErrCancelRequested) {
		t.Fatalf("Heartbeat of the running step = %v, want ErrCancelRequested", errs[0])
	}
	w.fail(t, jobsRun[0], true)
	w.claimExactly(t) // the AfterSettled step is cancelled, not released
	r, steps := w.info(t, id)
	if r.Status != store.WorkflowCancelled || steps["settled"].State != string(store.StatusCancelled) {
		t.Fatalf("after the running step ended: %s, settled %s", r.Status, steps["settled"].State)
	}
	if got := w.finishedBy(t, jobsRun[0].ID); !slices.Equal(got, []string{"c:cancelled"}) {
		t.Fatalf("FinishedBy(the running step) = %v", got)
	}
	if fin, err := w.ws.CancelWorkflow(w.ctx, id, t0); err != nil || fin {
		t.Fatalf("CancelWorkflow of a finished workflow: %v, %v", fin, err)
	}
	if _, err := w.ws.CancelWorkflow(w.ctx, int64(store.NewJobID(1, 999)), t0); !errors.Is(err, store.ErrWorkflowNotFound) {
		t.Fatalf("CancelWorkflow(unknown) = %v", err)
	}
	idle, _ := w.insert(t, "idle", wfStep("p", nil, nil), wfStep("q", []string{"p"}, nil))
	if fin, err := w.ws.CancelWorkflow(w.ctx, idle, t0); err != nil || !fin {
		t.Fatalf("CancelWorkflow without running steps = %v, %v; want finished", fin, err)
	}
	if r, _ := w.info(t, idle); r.Status != store.WorkflowCancelled {
		t.Fatalf("status %s, want cancelled", r.Status)
	}
	if _, err := w.ws.Workflow(w.ctx, int64(store.NewJobID(0, 999))); !errors.Is(err, store.ErrWorkflowNotFound) {
		t.Fatalf("Workflow(unknown) = %v", err)
	}
	// Cancelling a step's job directly cascades like a failure.
	id2, jobs2 := w.insert(t, "d", wfStep("x", nil, nil), wfStep("y", []string{"x"}, nil))
	if _, err := w.st.Cancel(w.ctx, jobs2["x"], t0); err != nil {
		t.Fatal(err)
	}
	if r, steps := w.info(t, id2); r.Status != store.WorkflowFailed || steps["y"].State != string(store.StatusCancelled) {
		t.Fatalf("after Cancel(x): %s, y %s", r.Status, steps["y"].State)
	}
	_ = jobs
}

// testWorkflowRetention: Prune deletes a finished workflow (with its
// steps' jobs) once its end is past the cutoff, never a running one.
func testWorkflowRetention(t *testing.T, w *wfBundle) {
	done, _ := w.insert(t, "done", wfStep("only", nil, nil))
	running, runJobs := w.insert(t, "running", wfStep("first", nil, nil), wfStep("second", []string{"first"}, nil))
	got := w.claim(t)
	w.complete(t, got["only"], `1`)
	w.complete(t, got["first"], `2`)
	// Cutoff before the end: nothing goes.
	if _, err := w.st.Prune(w.ctx, store.PruneParams{CompletedBefore: t0, FinishedBefore: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ws.Workflow(w.ctx, done); err != nil {
		t.Fatalf("workflow pruned before its cutoff: %v", err)
	}
	res, err := w.st.Prune(w.ctx, store.PruneParams{CompletedBefore: t0.Add(time.Hour), FinishedBefore: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Workflows != 1 {
		t.Errorf("Prune removed %d workflows, want 1", res.Workflows)
	}
	if _, err := w.ws.Workflow(w.ctx, done); !errors.Is(err, store.ErrWorkflowNotFound) {
		t.Fatalf("finished workflow after its cutoff: %v", err)
	}
	r, steps := w.info(t, running)
	if r.Status != store.WorkflowRunning || steps["first"].State != string(store.StatusCompleted) {
		t.Fatalf("running workflow after Prune: %+v", r)
	}
	if _, err := w.st.Job(w.ctx, runJobs["second"]); err != nil {
		t.Fatalf("running workflow's waiting step pruned: %v", err)
	}
	// Its completed step's row was pruned, but its result is kept.
	out, err := w.ws.StepResult(w.ctx, runJobs["second"], "first")
	if err != nil || string(out.Result) != `2` {
		t.Fatalf("StepResult after pruning the step's job = %+v, %v", out, err)
	}
}

// testWorkflowStepResult: StepResult says whether a job is a step, the
// step is known, and returns its stored result.
func testWorkflowStepResult(t *testing.T, w *wfBundle) {
	_, jobs := w.insert(t, "r", wfStep("a", nil, nil), wfStep("b", []string{"a"}, nil))
	a := w.claimExactly(t, "a")
	w.complete(t, a["a"], `{"x":1}`)
	out, err := w.ws.StepResult(w.ctx, jobs["b"], "a")
	if err != nil || !out.InWorkflow || !out.Known || out.State != string(store.StatusCompleted) || string(out.Result) != `{"x":1}` {
		t.Fatalf("StepResult(b, a) = %+v, %v", out, err)
	}
	if out, err := w.ws.StepResult(w.ctx, jobs["b"], "nope"); err != nil || !out.InWorkflow || out.Known {
		t.Fatalf("StepResult(unknown) = %+v, %v", out, err)
	}
	plain := insert(t, w.testBundle, store.InsertParams{Shard: 1, Task: "p"})
	if out, err := w.ws.StepResult(w.ctx, plain[0], "a"); err != nil || out.InWorkflow {
		t.Fatalf("StepResult(not a step) = %+v, %v", out, err)
	}
}
