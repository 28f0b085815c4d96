package queuemaxhttp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
)

func TestAdmin_RetryWorkflow(t *testing.T) {
	t.Parallel()
	f := newWFFixture(t, Options{Token: adminTestToken})
	path := fmt.Sprintf("/admin/workflows/%d/retry", f.broken)
	bearer := "Bearer " + adminTestToken

	if r := f.do(t, "POST", path, "", "", ""); r.status != 401 {
		t.Errorf("retry without a token = %d %s, want 401", r.status, r.raw)
	}
	if r := f.do(t, "POST", path, bearer, "application/json", `{"x":1}`); r.status != 400 {
		t.Errorf("retry with a body = %d %s, want 400", r.status, r.raw)
	}
	r := f.do(t, "POST", path, bearer, "", "")
	if r.status != 200 || r.body["status"] != "running" {
		t.Fatalf("retry = %d %s, want 200 and the running workflow", r.status, r.raw)
	}
	info, err := f.b.c.Workflow(f.b.ctx, f.broken)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, s := range info.Steps {
		states = append(states, s.Name+"="+string(s.Status))
	}
	if diff := cmp.Diff([]string{"bad=pending", "after=waiting"}, states); info.Status != queuemax.WorkflowRunning || diff != "" {
		t.Errorf("after retry: %s (-want +got):\n%s", info.Status, diff)
	}
	for id, want := range map[queuemax.WorkflowID]string{f.broken: "is running", f.order: "is running", f.solo: "is completed"} {
		p := fmt.Sprintf("/admin/workflows/%d/retry", id)
		if r := f.do(t, "POST", p, bearer, "", ""); r.status != 409 || !strings.Contains(r.raw, want) {
			t.Errorf("retry of %d = %d %s, want 409 (%s)", id, r.status, r.raw, want)
		}
	}
	if r := f.do(t, "POST", fmt.Sprintf("/admin/workflows/%d/retry", queuemax.NewWorkflowID(0, 999)), bearer, "", ""); r.status != 404 {
		t.Errorf("retry unknown = %d %s, want 404", r.status, r.raw)
	}
	ro := newWFFixture(t, Options{})
	if r := ro.do(t, "POST", fmt.Sprintf("/admin/workflows/%d/retry", ro.broken), "", "", ""); r.status != 403 {
		t.Errorf("retry on a read-only handler = %d %s, want 403", r.status, r.raw)
	}
}
