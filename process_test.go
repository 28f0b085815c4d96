package queuemax

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the test binary itself as a second OS process (the
// child), selected by environment variables, as cmd/stringer's tests do.
const (
	childEnv      = "QUEUEMAX_TEST_CHILD"
	childDirEnv   = "QUEUEMAX_TEST_DIR"
	childShardEnv = "QUEUEMAX_TEST_SHARDS"
	// With these set, children open that PostgreSQL schema instead of Dir.
	childDSNEnv    = "QUEUEMAX_TEST_CHILD_DSN"
	childSchemaEnv = "QUEUEMAX_TEST_CHILD_SCHEMA"
)

func childMain() int {
	dir := os.Getenv(childDirEnv)
	shards, _ := strconv.Atoi(os.Getenv(childShardEnv))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...); out.Flush() }
	switch mode := os.Getenv(childEnv); mode {
	case "claim":
		c, err := Open(ctx, childConfig(dir, shards, Config{}))
		if err != nil {
			say("error %v", err)
			return 1
		}
		defer c.Close()
		for {
			jobs, err := c.Claim(ctx, fmt.Sprint("child-", os.Getpid()), 25)
			if err != nil {
				say("error %v", err)
				return 1
			}
			if len(jobs) == 0 {
				if has, _ := c.st.HasWork(ctx); !has {
					return 0
				}
				continue
			}
			for _, j := range jobs {
				if err := c.Complete(ctx, j, nil); err != nil {
					say("error %v", err)
					return 1
				}
				say("%d", j.ID)
			}
		}
	case "hang", "late":
		goFile := filepath.Join(dir, "go")
		h := DefineResult("t.Long", TaskOptions{}, func(ctx context.Context, _ echoArgs) (string, error) {
			say("started")
			// Ignore ctx on purpose: a late worker that does not notice it
			// lost its job.
			for {
				if _, err := os.Stat(goFile); err == nil {
					return "child", nil
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
		c, err := Open(ctx, childConfig(dir, shards, Config{Logger: slog.New(slog.DiscardHandler), Handlers: []Handler{h}, HeartbeatInterval: 100 * time.Millisecond,
			StuckTimeout: 300 * time.Millisecond, RecoveryInterval: time.Hour, DrainTimeout: time.Second}))
		if err != nil {
			say("error %v", err)
			return 1
		}
		defer c.Close()
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		for {
			select {
			case err := <-done:
				if err != nil {
					say("error %v", err)
					return 1
				}
				return 0
			case <-time.After(10 * time.Millisecond):
			}
			if ws, ok := c.WorkerStats(); ok && ws.LeaseLost > 0 {
				say("lease_lost processed=%d", ws.Processed)
				cancel()
			}
		}
	case "untilsignal":
		stop()                                    // the documented program catches signals itself
		return untilSignalChild(dir, shards, say) // signal_test.go
	case "sched":
		return schedChild(dir, shards, os.Stdin, say)
	case "probe":
		return probeChild(ctx, dir, shards, say)
	case "wfchaos":
		return wfChaosChild(ctx, dir, shards, say) // workflow_chaos_test.go
	case "stepchaos":
		return stepChaosChild(ctx, dir, shards, say) // jobsteps_chaos_test.go
	default:
		if pgHook.ChildMain != nil {
			if code, ok := pgHook.ChildMain(ctx, mode, dir, say); ok {
				return code
			}
		}
		if code, ok := limitsChildMain(ctx, mode, dir, shards, say); ok {
			return code
		}
		fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
		return 2
	}
}

type child struct {
	cmd   *exec.Cmd
	lines chan string
}

func startChild(t *testing.T, mode, dir string, shards int, env ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir, childShardEnv+"="+strconv.Itoa(shards))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := &child{cmd: cmd, lines: make(chan string, 100000)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		close(ch.lines)
	}()
	t.Cleanup(func() {
		if sigCont != nil {
			cmd.Process.Signal(sigCont)
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	return ch
}

// expect waits for a line with prefix from the child.
func (ch *child) expect(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-ch.lines:
			if !ok {
				t.Fatalf("child exited before printing %q", prefix)
			}
			if strings.HasPrefix(l, "error") {
				t.Fatalf("child: %s", l)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("child did not print %q", prefix)
		}
	}
}

// pause stops the child with SIGSTOP at a moment when it holds no shard's
// write lock: a process frozen inside a transaction blocks every writer of
// that shard, which no other worker can get past.
func (ch *child) pause(t *testing.T, dir string, shards int) {
	t.Helper()
	needStop(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := ch.cmd.Process.Signal(sigStop); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, ch.cmd.Process.Pid)
		if !anyShardLocked(t, dir, shards) {
			return
		}
		ch.cmd.Process.Signal(sigCont)
		if time.Now().After(deadline) {
			t.Fatal("child kept holding a write lock")
		}
		time.Sleep(time.Millisecond) // let it finish its transaction
	}
}

// needStop skips a test that freezes a child where that is impossible.
func needStop(t *testing.T) {
	t.Helper()
	if sigStop == nil {
		t.Skipf("no SIGSTOP on %s to freeze a worker process", runtime.GOOS)
	}
}

// waitStopped polls /proc until process pid is in the stopped state.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Skipf("cannot read process state: %v", err)
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("process %d did not stop", pid)
}

// anyShardLocked reports whether another connection holds the write lock
// of one of the shard files in dir.
func anyShardLocked(t *testing.T, dir string, shards int) bool {
	t.Helper()
	for i := range shards {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, fmt.Sprintf("shard_%d.db", i))+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(`BEGIN IMMEDIATE; ROLLBACK`)
		db.Close()
		if err != nil {
			return true
		}
	}
	return false
}

func TestProcesses_NeverClaimTheSameJob(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 4})
	const n = 3000
	params := make([]EnqueueParams, n)
	for i := range params {
		params[i] = EnqueueParams{Task: "t", Payload: echoArgs{i}}
	}
	ids, err := b.c.EnqueueMany(b.ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	kids := []*child{startChild(t, "claim", b.dir, 4), startChild(t, "claim", b.dir, 4)}
	seen := make(map[JobID]int)
	perChild := make([]int, len(kids))
	for i, k := range kids {
		for l := range k.lines {
			if strings.HasPrefix(l, "error") {
				t.Fatalf("child %d: %s", i, l)
			}
			v, err := strconv.ParseInt(l, 10, 64)
			if err != nil {
				t.Fatalf("child %d printed %q", i, l)
			}
			seen[JobID(v)]++
			perChild[i]++
		}
		if err := k.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("job %d claimed %d times, want once", id, seen[id])
		}
	}
	if len(seen) != n {
		t.Errorf("claimed %d distinct jobs, want %d", len(seen), n)
	}
	t.Logf("claims per process: %v", perChild)
}

func TestProcesses_KilledWorkerJobIsRecovered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, Config{Dir: dir, Shards: 2})
	id, err := b.c.Enqueue(b.ctx, "t.Long", echoArgs{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	kid := startChild(t, "hang", dir, 2)
	kid.expect(t, "started")
	kid.cmd.Process.Signal(syscall.SIGKILL)
	kid.cmd.Wait()

	var runs int
	h := DefineResult("t.Long", TaskOptions{}, func(context.Context, echoArgs) (string, error) { runs++; return "survivor", nil })
	w := setup(t, Config{Dir: dir, Shards: 2, Handlers: []Handler{h}, HeartbeatInterval: 50 * time.Millisecond,
		StuckTimeout: 300 * time.Millisecond, RecoveryInterval: 50 * time.Millisecond})
	evs := collect(w.c, EventCompleted)
	stop := run(t, w.c)
	waitEvents(t, evs, 1)
	stop()
	j, err := w.c.Job(w.ctx, id)
	if err != nil || string(j.Result) != `"survivor"` || j.Attempts != 2 || runs != 1 {
		t.Errorf("job = %+v, %v, runs=%d; want completed once by the survivor on attempt 2", j, err, runs)
	}
}

func TestProcesses_PausedWorkerLateCompletionRejected(t *testing.T) {
	t.Parallel()
	needStop(t)
	dir := t.TempDir()
	b := setup(t, Config{Dir: dir, Shards: 1})
	id, err := b.c.Enqueue(b.ctx, "t.Long", echoArgs{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	kid := startChild(t, "late", dir, 1)
	kid.expect(t, "started")
	kid.pause(t, dir, 1)

	h := DefineResult("t.Long", TaskOptions{}, func(context.Context, echoArgs) (string, error) { return "survivor", nil })
	w := setup(t, Config{Dir: dir, Shards: 1, Handlers: []Handler{h}, HeartbeatInterval: 50 * time.Millisecond,
		StuckTimeout: 300 * time.Millisecond, RecoveryInterval: 50 * time.Millisecond})
	evs := collect(w.c, EventCompleted)
	stop := run(t, w.c)
	waitEvents(t, evs, 1)
	stop()

	// Resume the paused worker and let its handler finish.
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kid.cmd.Process.Signal(sigCont)
	if l := kid.expect(t, "lease_lost"); l != "lease_lost processed=0" {
		t.Errorf("child reported %q, want its completion rejected", l)
	}
	if err := kid.cmd.Wait(); err != nil {
		t.Errorf("child exit: %v", err)
	}
	j, err := w.c.Job(w.ctx, id)
	if err != nil || string(j.Result) != `"survivor"` || j.Status != StatusCompleted {
		t.Errorf("job = %+v, %v; want the survivor's completion", j, err)
	}
	s, _ := w.c.Stats(w.ctx)
	if s.TotalProcessed != 1 {
		t.Errorf("total processed = %d, want 1", s.TotalProcessed)
	}
}
