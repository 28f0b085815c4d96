package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/jsonview"
)

// TestShowAndListSteps: list's STEPS column and show print the progress a
// job's steps recorded.
func TestShowAndListSteps(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	var id, plain queuemax.JobID
	withClient(t, dir, 0, func(c *queuemax.Client) {
		var err error
		if id, err = c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
		if plain, err = c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
		if err := c.ResetJobSteps(t.Context(), id, []queuemax.JobStep{
			{Name: "charge", Done: true, Result: json.RawMessage(`{"receipt":"r-9"}`)},
			{Name: "import", Cursor: json.RawMessage(`120`)},
		}); err != nil {
			t.Fatal(err)
		}
	})
	res := ok(t, qm(t, append(d, "list")...), "list")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "STEPS") {
		t.Fatalf("list:\n%s", res.stdout)
	}
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, id.String()+" ") && !strings.Contains(l, "1 done; import at 120"):
			t.Errorf("list row of the job with steps lacks them: %q", l)
		case strings.HasPrefix(l, plain.String()+" ") && strings.Contains(l, "done"):
			t.Errorf("list row of the job without steps shows some: %q", l)
		}
	}
	res = ok(t, qm(t, append(d, "show", id.String())...), "show")
	for _, want := range []string{"Steps", "1 done", "charge", `{"receipt":"r-9"}`, "import", "running", "cursor 120"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, res.stdout)
		}
	}
	res = ok(t, qm(t, append(d, "show", id.String(), "--json")...), "show --json")
	var j jsonview.Job
	if err := json.Unmarshal([]byte(res.stdout), &j); err != nil || j.ID != id || len(j.Steps) != 2 || !j.Steps[0].Done ||
		j.Steps[0].Name != "charge" || string(j.Steps[1].Cursor) != "120" {
		t.Errorf("show --json = %s (%v)", res.stdout, err)
	}
	if res := ok(t, qm(t, append(d, "show", plain.String())...), "show plain"); strings.Contains(res.stdout, "Steps") {
		t.Errorf("show of a job without steps:\n%s", res.stdout)
	}
	wantFail(t, qm(t, append(d, "show")...), 2, "needs a job ID")
	wantFail(t, qm(t, append(d, "show", "x")...), 2, "invalid")
	wantFail(t, qm(t, append(d, "show", "999999")...), 1, "does not exist")
}
