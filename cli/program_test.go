package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuemax/queuemax/cli"
	"github.com/queuemax/queuemax/examples/tasks"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProgram_Run runs the command line in this process, so that the race
// detector watches the worker's goroutines: enqueue, a worker with two
// engines whose context carries the tasks' dependencies, stats while it
// runs, and a drain when the context is cancelled.
func TestProgram_Run(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	outbox := &tasks.Outbox{}
	var stdout, stderr syncBuffer
	p := &cli.Program{
		Name:     "tasks",
		Handlers: tasks.Handlers(),
		WorkerContext: func(ctx context.Context) context.Context {
			return tasks.WithDeps(ctx, tasks.Deps{Mailer: outbox})
		},
		Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	}
	run := func(ctx context.Context, args ...string) int {
		return p.Run(ctx, append([]string{"--data-dir", dir}, args...))
	}
	for _, to := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		if code := run(t.Context(), "enqueue", "--task", "SendEmail", "--payload", `{"to":"`+to+`","subject":"Hi"}`); code != 0 {
			t.Fatalf("enqueue: exit %d: %s", code, stderr.String())
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, "worker", "--tasks", "SendEmail", "--workers", "2", "--concurrency", "2", "--interval", "5ms")
	}()

	// Poll stats --json, through another Program, until the mail is out.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(outbox.Messages()) < 3 {
		select {
		case <-tick.C:
		case code := <-done:
			t.Fatalf("worker exited early with %d: %s%s", code, stdout.String(), stderr.String())
		case <-t.Context().Done():
			t.Fatalf("mail not sent: %s", stdout.String())
		}
		var out bytes.Buffer
		q := &cli.Program{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
		if code := q.Run(t.Context(), []string{"stats", "--json", "--data-dir", dir}); code != 0 {
			t.Fatalf("stats while the worker runs: exit %d: %s", code, out.String())
		}
		if !json.Valid(out.Bytes()) {
			t.Fatalf("stats --json: %s", out.String())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("worker: exit %d: %s", code, stderr.String())
	}
	if s := stdout.String(); !strings.Contains(s, "stopped after") || !strings.Contains(s, "processed 3, failed 0") {
		t.Errorf("worker output:\n%s", s)
	}
	if s := getStats(t, dir); s.Pending+s.Processing != 0 || s.TotalProcessed != 3 {
		t.Errorf("after the worker: %+v", s)
	}
}
