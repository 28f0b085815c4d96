package cli_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
)

// TestWorkersAndLiveTasks runs the example tasks' worker in this process and
// inspects it with the binaries: workers lists it, stats counts its tasks
// and warns about a task nobody runs, and the registry-less binary checks
// --task against the live worker's tasks.
func TestWorkersAndLiveTasks(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	d := []string{"--data-dir", dir}
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Handlers: tasks.Handlers(), WorkerID: "cli-test-worker",
		HeartbeatInterval: 50 * time.Millisecond, StuckTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(20 * time.Second)
	var out struct {
		Workers []queuemax.WorkerInfo `json:"workers"`
	}
	for len(out.Workers) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the worker never appeared in workers --json")
		}
		res := ok(t, qm(t, append(d, "workers", "--json")...), "workers --json")
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("workers --json: %v\n%s", err, res.stdout)
		}
	}
	if w := out.Workers[0]; w.ID != "cli-test-worker" || len(w.Tasks) != 5 || w.Breakers[taskPrefix+"SendEmail"] != "closed" {
		t.Errorf("worker = %+v", w)
	}
	res := ok(t, qm(t, append(d, "workers")...), "workers")
	if !strings.Contains(res.stdout, "cli-test-worker") || !strings.Contains(res.stdout, "SendEmail") {
		t.Errorf("workers table:\n%s", res.stdout)
	}

	// queuemax has no registry: the live worker's tasks stand in for it.
	wantFail(t, qm(t, append(d, "enqueue", "--task", "SendMail")...), 2, `unknown task "SendMail"`, `did you mean "`+taskPrefix+`SendEmail"`)
	res = ok(t, qm(t, append(d, "enqueue", "--task", "GenerateReport", "--in", "1h", "--payload", `{"user_id":1,"month":"2026-01"}`, "--json")...), "enqueue short name")
	if !strings.Contains(res.stdout, taskPrefix+"GenerateReport") {
		t.Errorf("enqueue short name: %s", res.stdout)
	}
	ok(t, qm(t, append(d, "enqueue", "--task", "other.Task", "--any-task")...), "enqueue --any-task")
	file := filepath.Join(t.TempDir(), "jobs.jsonl")
	os.WriteFile(file, []byte(`{"task":"`+taskPrefix+`SendEmail","payload":{"to":"a@b","subject":"s"}}`+"\n"+`{"task":"`+taskPrefix+`SendMail","payload":{}}`+"\n"), 0o600)
	wantFail(t, qm(t, append(d, "enqueue", "--file", file)...), 2, file+":2:", `unknown task "`+taskPrefix+`SendMail"`)

	// The tasks binary checks the payload against the parameters.
	wantFail(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"a@b"}`)...), 2, `field "subject"`, "missing")
	wantFail(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"a@b","subject":"s","cc":1}`)...), 2, `field "cc"`, "unknown field")

	res = ok(t, qm(t, append(d, "stats")...), "stats")
	for _, w := range []string{"Live workers", "TASK", "tasks.GenerateReport", "warning: task other.Task has 1 pending jobs and no live worker runs it"} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("stats lacks %q:\n%s", w, res.stdout)
		}
	}
}
