package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
)

func TestQueuesPauseResume(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	d := []string{"--data-dir", dir}
	ok(t, qm(t, append(d, "enqueue", "--task", taskPrefix+"SendEmail", "--any-task", "--queue", "emails")...), "enqueue --queue")
	ok(t, qm(t, append(d, "enqueue", "--task", taskPrefix+"SendEmail", "--any-task")...), "enqueue")
	wantFail(t, qm(t, append(d, "enqueue", "--task", taskPrefix+"SendEmail", "--any-task", "--queue", "Bad")...), 2, "--queue", "invalid queue name")

	got := listJobs(t, queuemaxBin, append(d, "list")...)
	queues := map[any]int{}
	for _, j := range got {
		queues[j["queue"]]++
	}
	if queues["emails"] != 1 || queues["default"] != 1 {
		t.Errorf("list --json queues = %v, want one emails and one default", queues)
	}

	res := ok(t, qm(t, append(d, "pause", "--queue", "emails")...), "pause")
	if res.stdout != "paused queue emails\n" {
		t.Errorf("pause: %q", res.stdout)
	}
	wantFail(t, qm(t, append(d, "pause")...), 2, "--queue is required")
	wantFail(t, qm(t, append(d, "pause", "--queue", "-x")...), 2, "invalid queue name")

	res = ok(t, qm(t, append(d, "queues")...), "queues")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "QUEUE") || !strings.Contains(lines[1], "default") ||
		!strings.Contains(lines[2], "emails") || !strings.Contains(lines[2], "yes") {
		t.Errorf("queues:\n%s", res.stdout)
	}
	if res := ok(t, qm(t, append(d, "stats")...), "stats"); !strings.Contains(res.stdout, "QUEUE") {
		t.Errorf("stats shows no queue table with a paused queue:\n%s", res.stdout)
	}
	// A claim (any process) skips the paused queue.
	withClient(t, dir, 0, func(c *queuemax.Client) {
		jobs, err := c.Claim(t.Context(), "test", 10)
		if err != nil || len(jobs) != 1 || jobs[0].Queue != "default" {
			t.Errorf("Claim while emails is paused = %v, %v; want the default job", jobs, err)
		}
	})

	res = ok(t, qm(t, append(d, "resume", "--queue", "emails", "--json")...), "resume")
	var out struct {
		Queue  string `json:"queue"`
		Paused bool   `json:"paused"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Queue != "emails" || out.Paused {
		t.Errorf("resume --json = %s (%v)", res.stdout, err)
	}
	res = ok(t, qm(t, append(d, "queues", "--json")...), "queues --json")
	var qs []queuemax.QueueInfo
	if err := json.Unmarshal([]byte(res.stdout), &qs); err != nil {
		t.Fatalf("queues --json: %v\n%s", err, res.stdout)
	}
	if len(qs) != 2 || qs[1].Name != "emails" || qs[1].Paused || qs[1].Pending != 1 || qs[0].Processing != 1 {
		t.Errorf("queues --json after resume = %+v", qs)
	}
}
