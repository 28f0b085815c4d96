package queuemaxhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/queuemax/queuemax"
)

// TestAdminHandler_JobSteps: GET /jobs/{id} and GET /jobs carry the
// progress a job's steps recorded; a job without steps has no "steps".
func TestAdminHandler_JobSteps(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{})
	if err := f.b.c.ResetJobSteps(f.b.ctx, f.failed, []queuemax.JobStep{
		{Name: "charge", Done: true, Result: json.RawMessage(`{"receipt":"r-9"}`)},
		{Name: "import", Cursor: json.RawMessage(`120`)},
	}); err != nil {
		t.Fatal(err)
	}
	type step struct {
		Name   string          `json:"name"`
		Done   bool            `json:"done"`
		Result json.RawMessage `json:"result"`
		Cursor json.RawMessage `json:"cursor"`
	}
	var j struct {
		Steps []step `json:"steps"`
	}
	r := f.do(t, "GET", fmt.Sprintf("/admin/jobs/%d", f.failed), "", "", "")
	if err := json.Unmarshal([]byte(r.raw), &j); err != nil || len(j.Steps) != 2 || j.Steps[0].Name != "charge" || !j.Steps[0].Done ||
		compact(j.Steps[0].Result) != `{"receipt":"r-9"}` || j.Steps[1].Name != "import" || j.Steps[1].Done || string(j.Steps[1].Cursor) != "120" {
		t.Errorf("GET /jobs/{id} steps = %+v (%v)\n%s", j.Steps, err, r.raw)
	}
	var list struct {
		Jobs []struct {
			ID    queuemax.JobID `json:"id"`
			Steps []step         `json:"steps"`
		} `json:"jobs"`
	}
	r = f.do(t, "GET", "/admin/jobs", "", "", "")
	if err := json.Unmarshal([]byte(r.raw), &list); err != nil {
		t.Fatal(err)
	}
	for _, lj := range list.Jobs {
		if want := map[bool]int{true: 2, false: 0}[lj.ID == f.failed]; len(lj.Steps) != want {
			t.Errorf("GET /jobs: job %d has %d steps, want %d", lj.ID, len(lj.Steps), want)
		}
	}
}

// compact returns raw without insignificant space.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
