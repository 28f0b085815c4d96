package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
)

// The commands that change stored jobs (retry, dlq, recover, purge) and the read-only wait and periodic.

// deadJobs enqueues n jobs of task in dir and fails each one permanently,
// so that they are dead-lettered.
func deadJobs(t *testing.T, dir, task string, n int) []queuemax.JobID {
	t.Helper()
	var ids []queuemax.JobID
	withClient(t, dir, 0, func(c *queuemax.Client) {
		for i := range n {
			id, err := c.Enqueue(t.Context(), task, map[string]any{"n": i}, queuemax.Opts{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		jobs, err := c.Claim(t.Context(), "test", n)
		if err != nil || len(jobs) != n {
			t.Fatalf("Claim: %d jobs, %v", len(jobs), err)
		}
		for _, j := range jobs {
			if _, err := c.Fail(t.Context(), j, queuemax.Permanent(errors.New("boom"))); err != nil {
				t.Fatal(err)
			}
		}
	})
	return ids
}

func TestRetryAndDLQ(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	ids := deadJobs(t, dir, taskPrefix+"SendEmail", 5)

	if s := getStats(t, dir); s.Failed != 5 || s.DeadLetters != 5 {
		t.Fatalf("after failing 5 jobs: failed %d, dead letters %d", s.Failed, s.DeadLetters)
	}
	dead := listJobs(t, tasksBin, append(d, "list", "--status", "dead")...)
	if len(dead) != 5 || dead[0]["error"] != "boom" {
		t.Fatalf("list --status dead: %v", dead)
	}
	// dead beside another status: the jobs, then the dead letters.
	res := ok(t, qm(t, append(d, "list", "--status", "failed,dead")...), "list --status failed,dead")
	if jobsPart, dlqPart, found := strings.Cut(res.stdout, "\ndead letters:\n"); !found || strings.Count(jobsPart, "failed") != 5 ||
		!strings.Contains(dlqPart, "DLQ ID") || strings.Count(dlqPart, "boom") != 5 {
		t.Errorf("list --status failed,dead: want 5 failed jobs, then 5 dead letters:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--status", "pending", "--status", "dead", "--json")...), "list --status pending,dead --json")
	var both struct {
		Jobs        []map[string]any `json:"jobs"`
		DeadLetters []map[string]any `json:"dead_letters"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &both); err != nil || both.Jobs == nil || len(both.Jobs) != 0 || len(both.DeadLetters) != 5 {
		t.Errorf("list --status pending,dead --json = %s (%v); want no jobs and 5 dead letters", res.stdout, err)
	}
	res = ok(t, qm(t, append(d, "dlq")...), "dlq")
	if !strings.Contains(res.stdout, "DLQ ID") || strings.Count(res.stdout, "tasks.SendEmail") != 5 {
		t.Errorf("dlq table:\n%s", res.stdout)
	}
	if got := listJobs(t, queuemaxBin, append(d, "dlq", "list", "--limit", "2")...); len(got) != 2 {
		t.Errorf("dlq list --limit 2: %d rows", len(got))
	}

	// One job by ID, then a shard, then everything.
	res = ok(t, qm(t, append(d, "retry", ids[0].String())...), "retry ID")
	if res.stdout != "retried job "+ids[0].String()+"\n" {
		t.Errorf("retry --job-id: %q", res.stdout)
	}
	if res := qm(t, append(d, "retry", "--job-id", ids[0].String())...); res.code != 1 || !strings.Contains(res.stderr, "is not a failed job") ||
		!strings.Contains(res.stderr, "queuemax retry: --job-id is deprecated") {
		t.Errorf("retry --job-id of a job no longer failed: exit %d, stderr %q", res.code, res.stderr)
	}
	shard := ids[1].Shard()
	inShard := 0
	for _, id := range ids[1:] {
		if id.Shard() == shard {
			inShard++
		}
	}
	res = ok(t, qm(t, append(d, "retry", "--shard", fmt.Sprint(shard), "--json")...), "retry --shard")
	if !strings.Contains(res.stdout, fmt.Sprintf(`"retried": %d`, inShard)) {
		t.Errorf("retry --shard %d --json = %s, want %d", shard, res.stdout, inShard)
	}
	res = ok(t, qm(t, append(d, "retry")...), "retry")
	jobs := "jobs"
	if 4-inShard == 1 {
		jobs = "job"
	}
	if want := fmt.Sprintf("retried %d failed %s across all shards\n", 4-inShard, jobs); res.stdout != want {
		t.Errorf("retry = %q, want %q", res.stdout, want)
	}
	if s := getStats(t, dir); s.Failed != 0 || s.DeadLetters != 0 || s.Pending != 5 {
		t.Errorf("after retry: %+v", s)
	}

	// dlq requeue: one row, then --all.
	deadJobs(t, dir, taskPrefix+"CallWebhook", 3)
	rows := listJobs(t, queuemaxBin, append(d, "dlq")...)
	if len(rows) != 3 {
		t.Fatalf("dlq: %d rows, want 3", len(rows))
	}
	res = ok(t, qm(t, append(d, "dlq", "requeue", fmt.Sprintf("%v:%v", rows[0]["shard"], rows[0]["id"]))...), "dlq requeue SHARD:DLQID")
	if !strings.HasPrefix(res.stdout, "requeued dead letter ") {
		t.Errorf("dlq requeue: %q", res.stdout)
	}
	if res := qm(t, append(d, "dlq", "requeue", "--shard", fmt.Sprint(rows[0]["shard"]), "--id", fmt.Sprint(rows[0]["id"]))...); res.code != 1 ||
		!strings.Contains(res.stderr, "no dead letter") || !strings.Contains(res.stderr, "--shard and --id are deprecated") {
		t.Errorf("dlq requeue --shard --id of a requeued letter: exit %d, stderr %q", res.code, res.stderr)
	}
	res = ok(t, qm(t, append(d, "dlq", "requeue", "--all")...), "dlq requeue --all")
	if res.stdout != "requeued 2 dead letters\n" {
		t.Errorf("dlq requeue --all: %q", res.stdout)
	}
	if s := getStats(t, dir); s.DeadLetters != 0 || s.Pending != 8 {
		t.Errorf("after dlq requeue: %+v", s)
	}
	res = ok(t, qm(t, append(d, "dlq")...), "dlq empty")
	if res.stdout != "no dead letters\n" {
		t.Errorf("empty dlq: %q", res.stdout)
	}
}

func TestRecover(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	withClient(t, dir, 0, func(c *queuemax.Client) {
		for range 2 {
			if _, err := c.Enqueue(t.Context(), taskPrefix+"SendEmail", map[string]any{}, queuemax.Opts{}); err != nil {
				t.Fatal(err)
			}
		}
		// Claimed and never acknowledged: the worker "died".
		if jobs, err := c.Claim(t.Context(), "dead-worker", 2); err != nil || len(jobs) != 2 {
			t.Fatalf("Claim: %d, %v", len(jobs), err)
		}
	})
	d := []string{"--data-dir", dir}
	res := ok(t, qm(t, append(d, "recover")...), "recover")
	if res.stdout != "recovered 0 orphaned jobs: 0 back to pending, 0 dead-lettered\n" {
		t.Errorf("recover of fresh claims: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "recover", "--older-than", "1ms", "--json")...), "recover --older-than")
	if !strings.Contains(res.stdout, `"requeued": 2`) {
		t.Errorf("recover --older-than 1ms --json: %s", res.stdout)
	}
	if s := getStats(t, dir); s.Processing != 0 || s.Pending != 2 {
		t.Errorf("after recover: %+v", s)
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	deadJobs(t, dir, "x", 2)
	for _, args := range [][]string{{"--task", "a"}, {"--task", "b", "--in", "1h"}, {"--task", "c"}} {
		ok(t, qm(t, append(append(d, "enqueue", "--any-task"), args...)...), "enqueue")
	}
	before := snap(t, dir)
	wantFail(t, qm(t, append(d, "purge", "--status", "pending")...), 2, "refusing to delete without --yes")
	if diff := cmp.Diff(before, snap(t, dir)); diff != "" {
		t.Errorf("purge without --yes changed the queue (-before +after):\n%s", diff)
	}
	res := ok(t, qm(t, append(d, "purge", "--status", "pending", "--status", "scheduled", "--yes")...), "purge")
	if res.stdout != "deleted 3 jobs (pending, scheduled)\n" {
		t.Errorf("purge --status pending --status scheduled: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "purge", "--status", "failed,completed", "--yes", "--json")...), "purge comma list")
	if !strings.Contains(res.stdout, `"jobs": 2`) {
		t.Errorf("purge --status failed,completed: %s", res.stdout)
	}
	if s := getStats(t, dir); s.Pending+s.Scheduled+s.Failed != 0 || s.DeadLetters != 2 {
		t.Errorf("after purge: %+v", s)
	}
	res = ok(t, qm(t, append(d, "purge", "--days", "1", "--yes")...), "purge --days 1")
	if res.stdout != "deleted 0 finished jobs and 0 dead letters older than 1 day\n" {
		t.Errorf("purge --days 1: %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "purge", "--days", "0", "--yes")...), "purge --days 0")
	if res.stdout != "deleted 0 finished jobs and 2 dead letters older than 0 days\n" {
		t.Errorf("purge --days 0: %q", res.stdout)
	}
}

// TestPurgeConfirm answers purge's question on a terminal, which script(1)
// provides.
func TestPurgeConfirm(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed: no terminal to test on")
	}
	dir := newQueue(t, 0)
	ok(t, qm(t, "--data-dir", dir, "enqueue", "--any-task", "--task", "a"), "enqueue")
	line := fmt.Sprintf("%s --data-dir %s purge --status pending", queuemaxBin, dir)
	for _, tt := range []struct {
		answer, want string
		pending      int64
	}{
		{"n\n", "nothing deleted", 1},
		{"y\n", "deleted 1 job (pending)", 0},
	} {
		res := invocation{bin: script, args: []string{"-qec", line, "/dev/null"}, stdin: tt.answer}.run(t)
		if res.code != 0 || !strings.Contains(res.stdout, "Delete 1 job (1 pending) from "+dir+"? [y/N]") || !strings.Contains(res.stdout, tt.want) {
			t.Errorf("purge answered %q: exit %d, output:\n%s%s", tt.answer, res.code, res.stdout, res.stderr)
		}
		if s := getStats(t, dir); s.Pending != tt.pending {
			t.Errorf("purge answered %q: %d pending, want %d", tt.answer, s.Pending, tt.pending)
		}
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	res := ok(t, qm(t, append(d, "wait")...), "wait on an empty queue")
	if !strings.HasPrefix(res.stdout, "queue empty after ") {
		t.Errorf("wait: %q", res.stdout)
	}
	ok(t, qm(t, append(d, "enqueue", "--any-task", "--task", "a")...), "enqueue")
	res = qm(t, append(d, "wait", "--timeout", "200ms", "--interval", "50ms")...)
	if res.code != 1 || !strings.HasSuffix(res.stderr, "queuemax wait: timed out after 200ms: 1 job left (1 pending, 0 scheduled, 0 running)\n") ||
		!strings.Contains(res.stderr, "0/1 done; 1 pending, 0 scheduled, 0 running") {
		t.Errorf("wait --timeout: exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

func TestPeriodic(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	res := ok(t, qm(t, "--data-dir", dir, "periodic"), "periodic")
	if !strings.HasPrefix(res.stdout, "no periodic tasks registered") {
		t.Errorf("periodic without registry: %q", res.stdout)
	}
	res = ok(t, tk(t, "--data-dir", dir, "periodic"), "tasks periodic")
	if !strings.Contains(res.stdout, "tasks.CleanupOldData  @every 1h0m0s  not registered yet") {
		t.Errorf("periodic with registry:\n%s", res.stdout)
	}
}
