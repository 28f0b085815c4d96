package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The worker command: running jobs, draining on a signal, --create.

// lines collects a running process's output lines.
type lines struct {
	mu    sync.Mutex
	all   []string
	added chan struct{} // signalled (without blocking) on every line
	done  chan struct{} // closed at EOF
}

func collect(r io.Reader) *lines {
	l := &lines{added: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// waitFor blocks until a line contains s.
func (l *lines) waitFor(t *testing.T, s string) {
	t.Helper()
	for !strings.Contains(l.text(), s) {
		select {
		case <-l.added:
		case <-l.done:
			t.Fatalf("output ended without %q:\n%s", s, l.text())
		case <-t.Context().Done():
			t.Fatalf("no %q in output:\n%s", s, l.text())
		}
	}
}

func TestWorker(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 0)
	d := []string{"--data-dir", dir}
	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	var recs []string
	for i := range 40 {
		recs = append(recs, fmt.Sprintf(`{"task":"%sSendEmail","payload":{"to":"u%d@example.com","subject":"Hi"}}`, taskPrefix, i))
	}
	for i := range 10 {
		recs = append(recs, fmt.Sprintf(`{"task":"%sGenerateReport","payload":{"user_id":%d,"month":"2026-10"}}`, taskPrefix, i))
	}
	if err := os.WriteFile(jobs, []byte(strings.Join(recs, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, tk(t, append(d, "enqueue", "--file", jobs)...), "enqueue --file")
	ok(t, tk(t, append(d, "enqueue", "--task", "SendEmail", "--payload", `{"to":"not-an-address","subject":"x"}`)...), "enqueue bad address")

	// Not PingMonitor, which runs every 2s and would add to the counts.
	cmd := exec.CommandContext(t.Context(), tasksBin, append(d, "worker", "--tasks", "SendEmail,GenerateReport",
		"--tasks", "CleanupOldData", "--workers", "2", "--concurrency", "4", "--interval", "50ms")...)
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := collect(stdout)

	// Poll stats until every job has run.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s := getStats(t, dir)
		if s.Pending+s.Scheduled+s.Processing == 0 && s.TotalProcessed+s.TotalFailed == 51 {
			break
		}
		select {
		case <-tick.C:
		case <-out.done:
			t.Fatalf("worker exited early:\n%s\n%s", out.text(), stderr.String())
		case <-t.Context().Done():
			t.Fatalf("jobs not done: %+v\n%s", s, out.text())
		}
	}
	out.waitFor(t, "processed 50  failed 1") // the live line caught up
	ok(t, qm(t, append(d, "wait", "--timeout", "10s")...), "wait")

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-out.done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker after SIGTERM: %v\nstdout:\n%s\nstderr:\n%s", err, out.text(), stderr.String())
	}
	text := out.text()
	for _, w := range []string{
		"worker: 3 tasks, 2 engines × 4 job slots",
		"tasks.CleanupOldData (@every 1h0m0s)",
		"jobs/s",
		"draining: waiting up to 30s for 0 running jobs",
		"stopped after ",
		": processed 50, failed 1, retried 0",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("worker output lacks %q:\n%s", w, text)
		}
	}
	// The log (level WARNING) holds only the bad address's dead-lettering.
	for line := range strings.Lines(stderr.String()) {
		if !strings.Contains(line, `msg="job dead-lettered"`) || !strings.Contains(line, "not-an-address") {
			t.Errorf("worker logged %q", line)
		}
	}
	s := getStats(t, dir)
	// Every completed job is kept for the completed-job retention (1h).
	if s.Processing != 0 || s.Completed != 50 || s.Failed != 1 || s.DeadLetters != 1 || s.TotalProcessed != 50 {
		t.Errorf("after the worker: %+v", s)
	}
	var periodic []struct {
		Task       string     `json:"task"`
		Registered bool       `json:"registered"`
		NextRun    *time.Time `json:"next_run"`
	}
	res := ok(t, qm(t, append(d, "periodic", "--json")...), "periodic --json")
	if err := json.Unmarshal([]byte(res.stdout), &periodic); err != nil || len(periodic) != 1 ||
		periodic[0].Task != taskPrefix+"CleanupOldData" || !periodic[0].Registered || periodic[0].NextRun == nil {
		t.Errorf("periodic --json after a worker ran = %s (%v)", res.stdout, err)
	}
	res = ok(t, qm(t, append(d, "periodic")...), "periodic")
	if !strings.Contains(res.stdout, "tasks.CleanupOldData  @every 1h0m0s  ") || !strings.Contains(res.stdout, "(in 59m") {
		t.Errorf("periodic after a worker ran:\n%s", res.stdout)
	}
}

// TestWorkerCreate starts a worker on a new data dir and stops it with
// SIGINT before any job exists.
func TestWorkerCreate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new")
	cmd := exec.CommandContext(t.Context(), tasksBin, "--data-dir", dir, "worker", "--create", "--tasks", "SendEmail,tasks.GenerateReport")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := collect(stdout)
	out.waitFor(t, "drains and stops")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-out.done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker after SIGINT: %v\n%s", err, out.text())
	}
	if text := out.text(); !strings.Contains(text, "worker: 2 tasks, 1 engine × 10 job slots") || !strings.Contains(text, "processed 0, failed 0") {
		t.Errorf("worker output:\n%s", text)
	}
	if s := getStats(t, dir); s.NumShards != 6 {
		t.Errorf("worker --create made %d shards, want 6", s.NumShards)
	}
}
