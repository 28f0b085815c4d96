package queuemaxhttp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
)

// wfFixture holds three workflows on one shard, made by claiming and
// acknowledging their jobs by hand (no worker runs):
//
//	solo   "order-2": one step, completed            → completed
//	broken "order-3": bad failed, after cancelled     → failed
//	order  "order-1": charge completed (with a result), ship pending
//	                  (after charge), mail waiting (after ship, receipt
//	                  bound to charge)                  → running
type wfFixture struct {
	*adminFixture
	solo, broken, order queuemax.WorkflowID
	chargeJob           queuemax.JobID
}

func newWFFixture(t *testing.T, opts Options) *wfFixture {
	t.Helper()
	var hs []queuemax.Handler
	for _, n := range []string{"wf.solo", "wf.bad", "wf.after", "wf.charge", "wf.ship", "wf.mail"} {
		hs = append(hs, adminOKHandler(n))
	}
	b := setup(t, queuemax.Config{Shards: 1, Handlers: hs})
	f := &wfFixture{adminFixture: &adminFixture{b: b}}
	enqueue := func(wf *queuemax.Workflow) queuemax.WorkflowID {
		t.Helper()
		id, err := b.c.EnqueueWorkflow(b.ctx, wf)
		if err != nil {
			t.Fatalf("EnqueueWorkflow %s: %v", wf.Name(), err)
		}
		return id
	}
	claim := func(task string) *queuemax.Job {
		t.Helper()
		jobs, err := b.c.Claim(b.ctx, "w1", 1)
		if err != nil || len(jobs) != 1 || jobs[0].Task != task {
			t.Fatalf("Claim = %v, %v; want one %s job", jobs, err, task)
		}
		return jobs[0]
	}
	add := func(wf *queuemax.Workflow, step, task string, opts ...queuemax.StepOption) {
		t.Helper()
		if err := wf.Add(step, task, map[string]any{"order": wf.Name()}, opts...); err != nil {
			t.Fatal(err)
		}
	}

	wf := queuemax.NewWorkflow("order-2")
	add(wf, "solo", "wf.solo")
	f.solo = enqueue(wf)
	if err := b.c.Complete(b.ctx, claim("wf.solo"), nil); err != nil {
		t.Fatal(err)
	}

	wf = queuemax.NewWorkflow("order-3")
	add(wf, "bad", "wf.bad")
	add(wf, "after", "wf.after", queuemax.After("bad"))
	f.broken = enqueue(wf)
	if _, err := b.c.Fail(b.ctx, claim("wf.bad"), queuemax.Permanent(errors.New("card declined"))); err != nil {
		t.Fatal(err)
	}

	wf = queuemax.NewWorkflow("order-1")
	add(wf, "charge", "wf.charge")
	add(wf, "ship", "wf.ship", queuemax.After("charge"))
	add(wf, "mail", "wf.mail", queuemax.After("ship"), queuemax.Bind("receipt", "charge"))
	f.order = enqueue(wf)
	charge := claim("wf.charge")
	f.chargeJob = charge.ID
	if err := b.c.Complete(b.ctx, charge, map[string]string{"number": "R-1"}); err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", NewHandler(b.c, opts)))
	f.h = mux
	return f
}

// listIDs returns the ids of a GET /workflows answer.
func listIDs(t *testing.T, r adminResponse) []queuemax.WorkflowID {
	t.Helper()
	list, ok := r.body["workflows"].([]any)
	if !ok {
		t.Fatalf("no workflows list in %s", r.raw)
	}
	var ids []queuemax.WorkflowID
	for _, w := range list {
		ids = append(ids, queuemax.WorkflowID(w.(map[string]any)["id"].(float64)))
	}
	return ids
}

func TestAdmin_Workflows(t *testing.T) {
	t.Parallel()
	f := newWFFixture(t, Options{Token: adminTestToken})

	r := f.do(t, "GET", "/admin/workflows", "", "", "")
	if r.status != 200 {
		t.Fatalf("GET /admin/workflows = %d %s", r.status, r.raw)
	}
	if diff := cmp.Diff([]queuemax.WorkflowID{f.order, f.broken, f.solo}, listIDs(t, r)); diff != "" {
		t.Errorf("workflows, newest first (-want +got):\n%s", diff)
	}
	first := r.body["workflows"].([]any)[0].(map[string]any)
	if first["name"] != "order-1" || first["status"] != "running" || first["steps"] != nil || first["created_at"] == nil {
		t.Errorf("listed workflow = %v, want order-1 running with created_at and no steps", first)
	}
	if _, ok := r.body["next_before"]; ok {
		t.Errorf("next_before on a page that is not full: %s", r.raw)
	}

	for status, want := range map[string][]queuemax.WorkflowID{
		"running": {f.order}, "completed": {f.solo}, "failed": {f.broken}, "cancelled": nil,
	} {
		r := f.do(t, "GET", "/admin/workflows?status="+status, "", "", "")
		if diff := cmp.Diff(want, listIDs(t, r)); r.status != 200 || diff != "" {
			t.Errorf("status=%s: %d (-want +got):\n%s", status, r.status, diff)
		}
	}
	if r := f.do(t, "GET", "/admin/workflows?name=order-3", "", "", ""); !cmp.Equal(listIDs(t, r), []queuemax.WorkflowID{f.broken}) {
		t.Errorf("name=order-3: %s", r.raw)
	}

	// Paging: two pages of two and one.
	r = f.do(t, "GET", "/admin/workflows?limit=2", "", "", "")
	next, ok := r.body["next_before"].(float64)
	if diff := cmp.Diff([]queuemax.WorkflowID{f.order, f.broken}, listIDs(t, r)); diff != "" || !ok || queuemax.WorkflowID(next) != f.broken {
		t.Fatalf("limit=2: next_before %v (-want +got):\n%s", r.body["next_before"], diff)
	}
	r = f.do(t, "GET", fmt.Sprintf("/admin/workflows?limit=2&before=%d", int64(next)), "", "", "")
	if diff := cmp.Diff([]queuemax.WorkflowID{f.solo}, listIDs(t, r)); diff != "" || r.body["next_before"] != nil {
		t.Errorf("second page: %s (-want +got):\n%s", r.raw, diff)
	}

	for _, tc := range []struct{ path, want string }{
		{"/admin/workflows?status=done", `unknown workflow status \"done\"`},
		{"/admin/workflows?limit=0", "query parameter limit"},
		{"/admin/workflows?before=x", "query parameter before"},
		{"/admin/workflows?task=x", `unknown query parameter \"task\"`},
		{"/admin/workflows/abc", `workflow id \"abc\"`},
	} {
		if r := f.do(t, "GET", tc.path, "", "", ""); r.status != 400 || !strings.Contains(r.raw, tc.want) {
			t.Errorf("GET %s = %d %s, want 400 with %q", tc.path, r.status, r.raw, tc.want)
		}
	}
	for _, path := range []string{
		fmt.Sprintf("/admin/workflows/%d", queuemax.NewWorkflowID(0, 999)),
		fmt.Sprintf("/admin/workflows/%d", queuemax.NewWorkflowID(1, 1)), // no shard 1
	} {
		if r := f.do(t, "GET", path, "", "", ""); r.status != 404 || r.body["error"] == nil {
			t.Errorf("GET %s = %d %s, want 404 with an error", path, r.status, r.raw)
		}
	}
}

func TestAdmin_WorkflowSteps(t *testing.T) {
	t.Parallel()
	f := newWFFixture(t, Options{Token: adminTestToken})

	r := f.do(t, "GET", fmt.Sprintf("/admin/workflows/%d", f.order), "", "", "")
	if r.status != 200 || r.body["name"] != "order-1" || r.body["status"] != "running" || r.body["shard"] != 0.0 {
		t.Fatalf("GET order = %d %s", r.status, r.raw)
	}
	type step struct {
		Name, Task, Status string
		After, Settled     []any
		Binds              []any
		HasJob             bool
	}
	var got []step
	for _, s := range r.body["steps"].([]any) {
		m := s.(map[string]any)
		got = append(got, step{Name: m["name"].(string), Task: m["task"].(string), Status: m["status"].(string),
			After: m["after"].([]any), Settled: m["after_settled"].([]any), Binds: m["binds"].([]any), HasJob: m["job_id"] != nil})
	}
	want := []step{
		{Name: "charge", Task: "wf.charge", Status: "completed", After: []any{}, Settled: []any{}, Binds: []any{}, HasJob: true},
		{Name: "ship", Task: "wf.ship", Status: "pending", After: []any{"charge"}, Settled: []any{}, Binds: []any{}, HasJob: true},
		{Name: "mail", Task: "wf.mail", Status: "waiting", After: []any{"ship"}, Settled: []any{},
			Binds: []any{map[string]any{"param": "receipt", "from": "charge"}}},
	}
	// A store may create a waiting step's job only at release.
	got[2].HasJob = false
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if id := r.body["steps"].([]any)[0].(map[string]any)["job_id"]; id != float64(f.chargeJob) {
		t.Errorf("charge job_id = %v, want %d", id, f.chargeJob)
	}

	// A step's job names its workflow; a job outside workflows names none.
	if r := f.do(t, "GET", fmt.Sprintf("/admin/jobs/%d", f.chargeJob), "", "", ""); r.body["workflow_id"] != float64(f.order) {
		t.Errorf("GET the charge job: workflow_id = %v, want %d", r.body["workflow_id"], f.order)
	}
	plain, err := f.b.c.Enqueue(f.b.ctx, "wf.solo", map[string]int{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if r := f.do(t, "GET", fmt.Sprintf("/admin/jobs/%d", plain), "", "", ""); r.status != 200 || r.body["workflow_id"] != nil {
		t.Errorf("GET a plain job: %d workflow_id = %v, want none", r.status, r.body["workflow_id"])
	}

	r = f.do(t, "GET", fmt.Sprintf("/admin/workflows/%d", f.broken), "", "", "")
	steps := r.body["steps"].([]any)
	bad, after := steps[0].(map[string]any), steps[1].(map[string]any)
	if r.body["status"] != "failed" || bad["status"] != "failed" || after["status"] != "cancelled" ||
		!strings.Contains(fmt.Sprint(after["reason"]), "bad") || r.body["finished_at"] == nil {
		t.Errorf("broken workflow = %s, want failed: bad failed, after cancelled with a reason naming bad", r.raw)
	}
}

func TestAdmin_CancelWorkflow(t *testing.T) {
	t.Parallel()
	f := newWFFixture(t, Options{Token: adminTestToken})
	path := fmt.Sprintf("/admin/workflows/%d/cancel", f.order)
	bearer := "Bearer " + adminTestToken

	if r := f.do(t, "POST", path, "", "", ""); r.status != 401 {
		t.Errorf("cancel without a token = %d %s, want 401", r.status, r.raw)
	}
	if r := f.do(t, "GET", path, "", "", ""); r.status != 405 {
		t.Errorf("GET %s = %d, want 405", path, r.status)
	}
	if r := f.do(t, "POST", path, bearer, "application/json", `{"x":1}`); r.status != 400 {
		t.Errorf("cancel with a body = %d %s, want 400", r.status, r.raw)
	}
	r := f.do(t, "POST", path, bearer, "", "")
	if r.status != 200 || r.body["status"] != "cancelled" {
		t.Fatalf("cancel = %d %s, want 200 and the cancelled workflow", r.status, r.raw)
	}
	info, err := f.b.c.Workflow(f.b.ctx, f.order)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, s := range info.Steps {
		states = append(states, s.Name+"="+string(s.Status))
	}
	if diff := cmp.Diff([]string{"charge=completed", "ship=cancelled", "mail=cancelled"}, states); info.Status != queuemax.WorkflowCancelled || diff != "" {
		t.Errorf("after cancel: %s (-want +got):\n%s", info.Status, diff)
	}
	if r := f.do(t, "POST", path, bearer, "", ""); r.status != 409 || !strings.Contains(r.raw, "already cancelled") {
		t.Errorf("second cancel = %d %s, want 409", r.status, r.raw)
	}
	if r := f.do(t, "POST", fmt.Sprintf("/admin/workflows/%d/cancel", queuemax.NewWorkflowID(0, 999)), bearer, "", ""); r.status != 404 {
		t.Errorf("cancel unknown = %d %s, want 404", r.status, r.raw)
	}
	ro := newWFFixture(t, Options{})
	if r := ro.do(t, "POST", fmt.Sprintf("/admin/workflows/%d/cancel", ro.order), "", "", ""); r.status != 403 {
		t.Errorf("cancel on a read-only handler = %d %s, want 403", r.status, r.raw)
	}
}
