package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
)

func TestCancel(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	var waiting, running queuemax.JobID
	var runningJob *queuemax.Job
	withClient(t, dir, 0, func(c *queuemax.Client) {
		var err error
		if running, err = c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
		jobs, err := c.Claim(t.Context(), "test", 1)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim: %d, %v", len(jobs), err)
		}
		runningJob = jobs[0]
		if waiting, err = c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	})
	// The job is named by a positional ID, as in every command.
	res := ok(t, qm(t, append(d, "cancel", waiting.String())...), "cancel waiting")
	if res.stdout != "cancelled job "+waiting.String()+"\n" || res.stderr != "" {
		t.Errorf("cancel: stdout %q, stderr %q", res.stdout, res.stderr)
	}
	// The old flag still works, with a deprecation notice on stderr.
	res = qm(t, append(d, "cancel", "--job-id", waiting.String())...)
	if res.code != 1 || !strings.Contains(res.stderr, "already finished") ||
		!strings.Contains(res.stderr, "--job-id is deprecated; write the ID as an argument: queuemax cancel "+waiting.String()) {
		t.Errorf("cancel --job-id of a finished job: exit %d, stderr %q; want 1, a deprecation notice and the error", res.code, res.stderr)
	}
	wantFail(t, qm(t, append(d, "cancel", "999999")...), 1, "does not exist")
	wantFail(t, qm(t, append(d, "cancel")...), 2, "the job's ID is required")
	wantFail(t, qm(t, append(d, "cancel", "1", "2")...), 2, `unexpected argument "2"`)

	res = ok(t, qm(t, append(d, "cancel", "--json", running.String())...), "cancel running")
	var out struct {
		JobID  queuemax.JobID  `json:"job_id"`
		Status queuemax.Status `json:"status"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.JobID != running || out.Status != queuemax.StatusProcessing {
		t.Errorf("cancel --json = %s (%v); want job %s processing", res.stdout, err, running)
	}
	got := listJobs(t, queuemaxBin, append(d, "list", "--status", "processing")...)
	if len(got) != 1 || got[0]["cancel_requested"] != true {
		t.Errorf("list --status processing = %v; want the job with cancel_requested", got)
	}
	withClient(t, dir, 0, func(c *queuemax.Client) {
		if err := c.Heartbeat(context.Background(), runningJob); !errors.Is(err, queuemax.ErrCancelRequested) {
			t.Errorf("Heartbeat = %v; want ErrCancelRequested", err)
		}
		if _, err := c.Fail(t.Context(), runningJob, queuemax.Cancel(nil)); err != nil {
			t.Fatal(err)
		}
	})
	if got := listJobs(t, queuemaxBin, append(d, "list", "--status", "cancelled")...); len(got) != 2 {
		t.Errorf("list --status cancelled = %d jobs, want 2", len(got))
	}
}
