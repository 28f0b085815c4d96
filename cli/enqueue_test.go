package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The enqueue and list commands.

func TestEnqueueAndList(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}

	res := ok(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"a@example.com","subject":"Hi"}`)...), "enqueue")
	if !regexp.MustCompile(`^enqueued tasks.SendEmail job \d+ on shard \d\n$`).MatchString(res.stdout) {
		t.Errorf("enqueue output %q", res.stdout)
	}
	// Options, --json, and flags after the command.
	res = ok(t, tk(t, "enqueue", "--data-dir", dir, "--task", "tasks.GenerateReport", "--payload", `{"user_id":7,"month":"2026-11"}`,
		"--priority", "high", "--key", "42", "--max-retries", "0", "--json"), "enqueue --json")
	var e struct {
		ID    int64  `json:"id"`
		Shard int    `json:"shard"`
		Task  string `json:"task"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &e); err != nil {
		t.Fatalf("enqueue --json: %v: %s", err, res.stdout)
	}
	if e.Shard != 42%6 || e.Task != taskPrefix+"GenerateReport" {
		t.Errorf("enqueue --json = %+v, want shard %d, task %sGenerateReport", e, 42%6, taskPrefix)
	}
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	ok(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"b@example.com","subject":"Later"}`, "--at", at)...), "enqueue --at")
	res = ok(t, qm(t, append(d, "enqueue", "--task", taskPrefix+"CleanupOldData", "--in", "90m", "--priority", "1")...), "enqueue --in")
	if !strings.Contains(res.stdout, "to run at") {
		t.Errorf("enqueue --in output %q", res.stdout)
	}

	pending := listJobs(t, queuemaxBin, append(d, "list", "--status", "pending")...)
	if len(pending) != 2 {
		t.Fatalf("list --status pending: %d jobs, want 2: %v", len(pending), pending)
	}
	report := pending[0]
	if pending[1]["task"] == taskPrefix+"GenerateReport" {
		report = pending[1]
	}
	want := map[string]any{"priority": 2.0, "max_attempts": 1.0, "key": 42.0, "status": "pending", "id": float64(e.ID)}
	for k, v := range want {
		if report[k] != v {
			t.Errorf("GenerateReport job %s = %v, want %v", k, report[k], v)
		}
	}
	// SendEmail's defaults come from its annotation: priority 2, 5 retries.
	emails := listJobs(t, tasksBin, append(d, "list", "--task", "SendEmail")...)
	if len(emails) != 2 {
		t.Fatalf("list --task SendEmail: %d jobs, want 2", len(emails))
	}
	for _, j := range emails {
		if j["priority"] != 2.0 || j["max_attempts"] != 6.0 {
			t.Errorf("SendEmail job: priority %v, max_attempts %v; want 2 and 6", j["priority"], j["max_attempts"])
		}
	}
	if got := listJobs(t, queuemaxBin, append(d, "list", "--status", "scheduled")...); len(got) != 2 {
		t.Errorf("list --status scheduled: %d jobs, want 2", len(got))
	}
	if got := listJobs(t, queuemaxBin, append(d, "list", "--limit", "3")...); len(got) != 3 {
		t.Errorf("list --limit 3: %d jobs, want 3", len(got))
	}
	if got := listJobs(t, queuemaxBin, append(d, "list", "--shard", fmt.Sprint(e.Shard), "--status", "pending", "--task", taskPrefix+"GenerateReport")...); len(got) != 1 {
		t.Errorf("list --shard --status --task: %d jobs, want 1", len(got))
	}

	res = ok(t, tk(t, append(d, "list")...), "list")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(res.stdout, "tasks.GenerateReport") ||
		!strings.Contains(res.stdout, "runs in 59m") {
		t.Errorf("list table:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--status", "failed")...), "list failed")
	if res.stdout != "no failed jobs\n" {
		t.Errorf("list --status failed on no failed jobs: %q", res.stdout)
	}
	// The task binary published its tasks: a binary without a registry
	// resolves a short name against the store's task catalogue, whether or
	// not a worker is live.
	res = ok(t, qm(t, append(d, "list", "--task", "SendEmail")...), "list short name without registry")
	if !strings.Contains(res.stdout, `"to":"a@example.com"`) || !strings.Contains(res.stdout, `"to":"b@example.com"`) ||
		strings.Contains(res.stdout, "CleanupOldData") {
		t.Errorf("list --task SendEmail without registry: want both tasks.SendEmail jobs only:\n%s", res.stdout)
	}

	s := getStats(t, dir)
	if s.Pending != 2 || s.Scheduled != 2 || s.NumShards != 6 || len(s.Shards) != 6 || !s.IsHealthy || s.DataDir != dir {
		t.Errorf("stats --json = %+v", s)
	}
	res = ok(t, qm(t, append(d, "stats")...), "stats")
	for _, w := range []string{"Data dir", "Shards", "Healthy", "Max retries", "Rate limit", "Circuit", "SHARD", "PENDING", "SCHEDULED", "DLQ", "total  2        2"} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("stats table lacks %q:\n%s", w, res.stdout)
		}
	}
	res = ok(t, qm(t, append(d, "stats", "--shard", fmt.Sprint(e.Shard), "--json")...), "stats --shard --json")
	var sh struct {
		Shard   int   `json:"shard"`
		Pending int64 `json:"pending"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &sh); err != nil || sh.Shard != e.Shard || sh.Pending < 1 {
		t.Errorf("stats --shard %d --json = %s (%v)", e.Shard, res.stdout, err)
	}

	// Without a registry and with no worker live, a short name resolves
	// against the task catalogue; a misspelt one is refused.
	res = ok(t, qm(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"c@example.com","subject":"Hi"}`, "--json")...), "enqueue short name without registry")
	if !strings.Contains(res.stdout, `"task": "tasks.SendEmail"`) {
		t.Errorf("enqueue --task SendEmail without registry or worker stored %s, want tasks.SendEmail", res.stdout)
	}
	wantFail(t, qm(t, append(d, "enqueue", "--task", "SendEmial")...), 2, `unknown task "SendEmial"`, `did you mean "tasks.SendEmail"`, "--any-task")
}

func TestEnqueueFile(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"task":"%sSendEmail","payload":{"to":"u%d@example.com","subject":"Hi"},"key":%d}`, taskPrefix, i, i))
	}
	good := write("good.jsonl", strings.Join(lines, "\n")+"\n\n")
	array := write("array.json", "[\n  "+strings.Join(lines[:4], ",\n  ")+"\n]\n")
	badLine := write("bad.jsonl", lines[0]+"\n"+lines[1]+"\n{\"task\": \"x\", \"payload\": {]\n"+lines[2]+"\n")
	notObject := write("notobject.jsonl", lines[0]+"\n"+`{"task":"x","payload":[1]}`+"\n")
	unknownTask := write("unknown.jsonl", lines[0]+"\n"+lines[1]+"\n"+`{"task":"`+taskPrefix+`SendMail","payload":{}}`+"\n")
	shortName := write("short.jsonl", `{"task":"SendEmail","payload":{}}`+"\n")

	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	before := snap(t, dir)
	for _, tt := range []struct {
		name string
		bin  string
		file string
		want []string
	}{
		{"BadLine", queuemaxBin, badLine, []string{badLine + ":3:"}},
		{"NotObject", queuemaxBin, notObject, []string{notObject + ":2:", "invalid payload"}},
		{"UnknownTask", tasksBin, unknownTask, []string{unknownTask + ":3:", `unknown task "` + taskPrefix + `SendMail"`}},
		{"ShortName", tasksBin, shortName, []string{shortName + ":1:", "write the full name"}},
	} {
		args := append(slices.Clone(d), "enqueue", "--file", tt.file)
		if tt.bin == queuemaxBin {
			args = append(args, "--any-task") // no task was published yet: these cases are about the file
		}
		res := invocation{bin: tt.bin, args: args}.run(t)
		t.Run(tt.name, func(t *testing.T) { wantFail(t, res, 2, tt.want...) })
	}
	wantFail(t, qm(t, append(d, "enqueue", "--file", filepath.Join(files, "missing.jsonl"))...), 1, "missing.jsonl")
	if diff := cmp.Diff(before, snap(t, dir)); diff != "" {
		t.Errorf("a bad file changed the queue (-before +after):\n%s", diff)
	}

	res := ok(t, tk(t, append(d, "enqueue", "--file", good)...), "enqueue --file")
	if res.stdout != "enqueued 30 jobs from "+good+"\n" {
		t.Errorf("enqueue --file output %q", res.stdout)
	}
	res = ok(t, qm(t, append(d, "enqueue", "--file", array, "--json")...), "enqueue --file array")
	if !strings.Contains(res.stdout, `"enqueued": 4`) {
		t.Errorf("enqueue --file array --json: %s", res.stdout)
	}
	if s := getStats(t, dir); s.Pending != 34 {
		t.Errorf("pending after the files = %d, want 34", s.Pending)
	}
}
