package storetest

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testWorkflowBatchEnds: one acknowledgement that completes several steps
// at once (both dependencies of a fan-in, a workflow's last step, the
// last dependency of a step another one blocked) ends and releases each
// exactly as acknowledgements one at a time do; two concurrent ones
// completing the two dependencies of one step release it once, with both
// bound results.
func testWorkflowBatchEnds(t *testing.T, w *wfBundle) {
	fan, fanJobs := w.insert(t, "fan", wfStep("a", nil, nil), wfStep("b", nil, nil),
		wfStep("join", []string{"a", "b"}, nil, store.WorkflowBind{Param: "ra", From: "a"}, store.WorkflowBind{Param: "rb", From: "b"}))
	solo, soloJobs := w.insert(t, "solo", wfStep("x", nil, nil))
	blk, _ := w.insert(t, "blocked", wfStep("p", nil, nil), wfStep("q", nil, nil), wfStep("r", []string{"p", "q"}, nil))
	// More steps in the same acknowledgement, so that it is a batch
	// (a store may treat lone acknowledgements differently).
	results := map[string]string{"a": `{"n":1}`, "b": `"two"`, "x": "", "q": ""}
	pads := []string{"a", "b", "x", "p", "q"}
	for _, n := range []string{"pad1", "pad2", "pad3", "pad4", "pad5", "pad6"} {
		w.insert(t, n, wfStep(n, nil, nil))
		results[n] = `"` + n + `"`
		pads = append(pads, n)
	}

	got := w.claimExactly(t, pads...)
	w.fail(t, got["p"], false)
	acks := []store.CompleteParams{}
	for n, res := range results {
		var r json.RawMessage
		if res != "" {
			r = json.RawMessage(res)
		}
		acks = append(acks, store.CompleteParams{Lease: store.Lease{ID: got[n].ID, Token: got[n].Lease, WorkerID: "w"}, Result: r, Now: t0.Add(2 * time.Second)})
	}
	for i, err := range w.st.Complete(w.ctx, acks) {
		if err != nil {
			t.Fatalf("Complete[%d]: %v", i, err)
		}
	}
	if ended := w.finishedBy(t, got["a"].ID, got["b"].ID, got["x"].ID, got["q"].ID); !slices.Equal(ended, []string{"solo:completed"}) &&
		!slices.Equal(ended, []string{"blocked:failed", "solo:completed"}) && !slices.Equal(ended, []string{"solo:completed", "blocked:failed"}) {
		t.Fatalf("FinishedBy = %v, want solo:completed (and blocked:failed)", ended)
	}
	join := w.claimExactly(t, "join")
	var p map[string]any
	if err := json.Unmarshal(join["join"].Payload, &p); err != nil || p["rb"] != "two" || p["ra"] == nil || p["ra"].(map[string]any)["n"] != 1.0 {
		t.Fatalf("join's payload = %s (%v), want both bound results", join["join"].Payload, err)
	}
	if r, steps := w.info(t, fan); r.Status != store.WorkflowRunning || steps["join"].State != "ready" ||
		steps["a"].State != "completed" || steps["b"].State != "completed" {
		t.Fatalf("fan = %s, steps %+v", r.Status, steps)
	}
	if r, _ := w.info(t, solo); r.Status != store.WorkflowCompleted || r.FinishedAt.IsZero() {
		t.Fatalf("solo = %+v, want completed with its end time", r)
	}
	if r, steps := w.info(t, blk); r.Status != store.WorkflowFailed || steps["r"].State != "cancelled" || steps["q"].State != "completed" {
		t.Fatalf("blocked = %s, steps %+v; want failed, r cancelled", r.Status, steps)
	}
	w.complete(t, join["join"], "")
	if r, _ := w.info(t, fan); r.Status != store.WorkflowCompleted {
		t.Fatalf("fan = %s after its last step, want completed", r.Status)
	}
	if ended := w.finishedBy(t, fanJobs["join"], soloJobs["x"]); !slices.Contains(ended, "fan:completed") {
		t.Fatalf("FinishedBy(join) = %v, want fan:completed", ended)
	}

	// Concurrent acknowledgements of both dependencies of one step.
	for round := range 5 {
		id, _ := w.insert(t, "race", wfStep("a", nil, nil), wfStep("b", nil, nil),
			wfStep("join", []string{"a", "b"}, nil, store.WorkflowBind{Param: "ra", From: "a"}, store.WorkflowBind{Param: "rb", From: "b"}))
		got := w.claimExactly(t, "a", "b")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, n := range []string{"a", "b"} {
			wg.Go(func() {
				errs[i] = w.st.Complete(w.ctx, []store.CompleteParams{{Lease: store.Lease{ID: got[n].ID, Token: got[n].Lease, WorkerID: "w"},
					Result: json.RawMessage(`"` + n + `"`), Now: t0.Add(2 * time.Second)}})[0]
			})
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: Complete = %v", round, errs)
		}
		join := w.claimExactly(t, "join")
		if err := json.Unmarshal(join["join"].Payload, &p); err != nil || p["ra"] != "a" || p["rb"] != "b" {
			t.Fatalf("round %d: join's payload = %s, want both bound results", round, join["join"].Payload)
		}
		w.complete(t, join["join"], "")
		if r, steps := w.info(t, id); r.Status != store.WorkflowCompleted || steps["join"].State != "completed" {
			t.Fatalf("round %d: workflow %s, join %s; want completed", round, r.Status, steps["join"].State)
		}
	}
}
