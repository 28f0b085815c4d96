package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

func TestQueuesLimit(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	d := []string{"--data-dir", dir}
	ok(t, qm(t, append(d, "enqueue", "--task", taskPrefix+"SendEmail", "--any-task", "--queue", "emails")...), "enqueue --queue")

	res := ok(t, qm(t, append(d, "queues", "limit", "emails", "--rate", "50/s", "--concurrency", "4")...), "queues limit")
	if res.stdout != "queue emails limits: rate 50/1s, concurrency 4\n" {
		t.Errorf("queues limit: %q", res.stdout)
	}
	withClient(t, dir, 0, func(c *queuemax.Client) {
		qs, err := c.Queues(t.Context())
		want := queuemax.QueueLimits{Rate: queuemax.Rate{Limit: 50, Per: time.Second}, Concurrency: 4}
		if err != nil || len(qs) != 1 || qs[0].Limits != want {
			t.Errorf("Queues = %+v, %v; want emails with %+v", qs, err, want)
		}
	})
	// A flag left out keeps its value; 0 clears one limit.
	res = ok(t, qm(t, append(d, "queues", "limit", "emails", "--concurrency", "0")...), "queues limit --concurrency 0")
	if res.stdout != "queue emails limits: rate 50/1s\n" {
		t.Errorf("queues limit --concurrency 0: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "queues")...), "queues")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "LIMITS") || !strings.Contains(lines[1], "rate 50/1s") {
		t.Errorf("queues:\n%s", res.stdout)
	}
	if res := ok(t, qm(t, append(d, "stats")...), "stats"); !strings.Contains(res.stdout, "queue emails") {
		t.Errorf("stats shows no global limit of queue emails:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "queues", "limit", "emails", "--json")...), "queues limit --json")
	var out struct {
		Queue  string               `json:"queue"`
		Limits queuemax.QueueLimits `json:"limits"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Queue != "emails" || out.Limits.Rate.Limit != 50 || out.Limits.Concurrency != 0 {
		t.Errorf("queues limit --json = %s (%v)", res.stdout, err)
	}
	res = ok(t, qm(t, append(d, "queues", "limit", "emails", "--clear")...), "queues limit --clear")
	if res.stdout != "cleared the limits of queue emails\n" {
		t.Errorf("queues limit --clear: %q", res.stdout)
	}
	if res := ok(t, qm(t, append(d, "queues")...), "queues"); strings.Contains(res.stdout, "LIMITS") {
		t.Errorf("queues after --clear still shows limits:\n%s", res.stdout)
	}
	wantFail(t, qm(t, append(d, "queues", "limit")...), 2, "NAME is required")
	wantFail(t, qm(t, append(d, "queues", "limit", "Bad")...), 2, "invalid queue name")
	wantFail(t, qm(t, append(d, "queues", "limit", "emails", "--rate", "50")...), 2, "--rate", "N/s")
	wantFail(t, qm(t, append(d, "queues", "limit", "emails", "--rate", "5/x")...), 2, "--rate", "duration")
	wantFail(t, qm(t, append(d, "queues", "limit", "emails", "--concurrency", "-1")...), 2, "--concurrency", "≥ 0")
	wantFail(t, qm(t, append(d, "queues", "limit", "emails", "--clear", "--rate", "1/s")...), 2, "--clear")
}
