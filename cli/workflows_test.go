package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
)

func TestWorkflows(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	var id queuemax.WorkflowID
	withClient(t, dir, 0, func(c *queuemax.Client) {
		wf := queuemax.NewWorkflow("order-7")
		wf.Add("charge", taskPrefix+"SendEmail", map[string]any{})
		wf.Add("mail", taskPrefix+"SendEmail", map[string]any{}, queuemax.After("charge"))
		var err error
		if id, err = c.EnqueueWorkflow(t.Context(), wf); err != nil {
			t.Fatal(err)
		}
	})
	res := ok(t, qm(t, append(d, "workflows")...), "workflows")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], id.String()) ||
		!strings.Contains(lines[1], "order-7") || !strings.Contains(lines[1], "running") {
		t.Errorf("workflows:\n%s", res.stdout)
	}
	if res := ok(t, qm(t, append(d, "workflows", "list", "--status", "completed")...), "workflows --status completed"); res.stdout != "no workflows\n" {
		t.Errorf("workflows --status completed: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "workflows", "show", id.String())...), "workflows show")
	if !strings.Contains(res.stdout, `"order-7": running`) || !strings.Contains(res.stdout, "waiting") ||
		!strings.Contains(res.stdout, "pending") || !strings.Contains(res.stdout, "charge") {
		t.Errorf("workflows show:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "workflows", "show", id.String(), "--json")...), "workflows show --json")
	var info queuemax.WorkflowInfo
	if err := json.Unmarshal([]byte(res.stdout), &info); err != nil || info.ID != id || len(info.Steps) != 2 ||
		info.Steps[1].Status != queuemax.StepWaiting || info.Steps[1].After[0] != "charge" {
		t.Errorf("workflows show --json = %s (%v)", res.stdout, err)
	}
	wantFail(t, qm(t, append(d, "workflows", "--status", "done")...), 2, "invalid workflow status")
	wantFail(t, qm(t, append(d, "workflows", "show")...), 2, "needs a workflow ID")
	wantFail(t, qm(t, append(d, "workflows", "show", "x")...), 2, "invalid workflow id")
	wantFail(t, qm(t, append(d, "workflows", "show", "999999")...), 1, "does not exist")
	wantFail(t, qm(t, append(d, "workflows", "frob")...), 2, "unknown workflows command")

	res = ok(t, qm(t, append(d, "workflows", "cancel", id.String())...), "workflows cancel")
	if res.stdout != "workflow "+id.String()+" is cancelled\n" {
		t.Errorf("workflows cancel: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "workflows", "show", id.String())...), "workflows show after cancel")
	if !strings.Contains(res.stdout, "cancelled") || !strings.Contains(res.stdout, "workflow cancelled") {
		t.Errorf("workflows show after cancel:\n%s", res.stdout)
	}
	if st := ok(t, qm(t, append(d, "stats", "--json")...), "stats"); !strings.Contains(st.stdout, `"cancelled": 1`) {
		t.Errorf("stats --json lacks the cancelled workflow:\n%s", st.stdout)
	}

	res = ok(t, qm(t, append(d, "workflows", "retry", id.String())...), "workflows retry")
	if res.stdout != "retrying workflow "+id.String()+": 2 steps will run again\n" {
		t.Errorf("workflows retry: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "workflows", "show", id.String(), "--json")...), "workflows show after retry")
	if err := json.Unmarshal([]byte(res.stdout), &info); err != nil || info.Status != queuemax.WorkflowRunning ||
		info.Steps[0].Status != queuemax.StatusPending || info.Steps[1].Status != queuemax.StepWaiting {
		t.Errorf("workflows show after retry = %s (%v)", res.stdout, err)
	}
	wantFail(t, qm(t, append(d, "workflows", "retry", id.String())...), 1, "is running")
	wantFail(t, qm(t, append(d, "workflows", "retry", "999999")...), 1, "does not exist")
}
