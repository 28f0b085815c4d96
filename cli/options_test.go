package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// TestListTagsAndCompleted: list --tag filters by tag and shows a TAGS
// column; a completed job stays listed (retention) with its finish time;
// list --json carries tags, timeout_ms and metadata.
func TestListTagsAndCompleted(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	var vip, done queuemax.JobID
	withClient(t, dir, 0, func(c *queuemax.Client) {
		// One key, so one shard: the claim takes the high-priority job.
		var err error
		if vip, err = c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{
			Key: queuemax.Ptr(int64(1)), Tags: []string{"vip", "eu"}, Timeout: 2 * time.Second, Metadata: map[string]any{"tenant": "acme"}}); err != nil {
			t.Fatal(err)
		}
		if done, err = c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{Key: queuemax.Ptr(int64(1)), Priority: queuemax.Ptr(queuemax.PriorityHigh)}); err != nil {
			t.Fatal(err)
		}
		jobs, err := c.Claim(t.Context(), "test", 1)
		if err != nil || len(jobs) != 1 || jobs[0].ID != done {
			t.Fatalf("Claim = %v, %v; want job %d", jobs, err, done)
		}
		if err := c.Complete(t.Context(), jobs[0], nil); err != nil {
			t.Fatal(err)
		}
	})
	got := listJobs(t, queuemaxBin, append(d, "list", "--tag", "vip")...)
	if len(got) != 1 || got[0]["id"] != float64(vip) || got[0]["timeout_ms"] != 2000.0 ||
		len(got[0]["tags"].([]any)) != 2 || got[0]["metadata"].(map[string]any)["tenant"] != "acme" {
		t.Errorf("list --tag vip = %v; want job %d with its tags, timeout and metadata", got, vip)
	}
	res := ok(t, qm(t, append(d, "list")...), "list")
	if !strings.Contains(res.stdout, "TAGS") || !strings.Contains(res.stdout, "vip,eu") {
		t.Errorf("list: no TAGS column with vip,eu:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--status", "completed")...), "list completed")
	if !strings.Contains(res.stdout, done.String()) || !strings.Contains(res.stdout, "finished ") || strings.Contains(res.stdout, "TAGS") {
		t.Errorf("list --status completed: want job %s, finished, and no TAGS column:\n%s", done, res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--tag", "nope")...), "list --tag nope")
	if res.stdout != "no jobs tagged \"nope\"\n" {
		t.Errorf("list --tag nope: %q", res.stdout)
	}
	wantFail(t, qm(t, append(d, "list", "--status", "dead", "--tag", "vip")...), 2, "--tag does not apply")
}
