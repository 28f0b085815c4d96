// Package pgfaults_test runs queuemax on PostgreSQL under production
// faults — server restarts, a partitioned host, skewed clocks, a pooler —
// with several worker processes (the test binary run again as a child)
// and checks every job's executions from outside. Tests that restart
// their server run a private one (pgtest.NewCluster) so the shared test
// server and other tests are never disturbed.
package pgfaults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/clock"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// Environment of a child worker process.
const (
	envChild  = "QMFAULTS_CHILD" // the mode; set only in children
	envDSN    = "QMFAULTS_DSN"
	envSchema = "QMFAULTS_SCHEMA"
	envOut    = "QMFAULTS_OUT"   // the file the child records executions in
	envStuck  = "QMFAULTS_STUCK" // StuckTimeout, a Go duration
	envSkew   = "QMFAULTS_SKEW"  // the child's clock offset, a Go duration
	envSlow   = "QMFAULTS_SLOW"  // how long each job's handler takes
	envTick   = "QMFAULTS_TICK"  // a periodic task t.Tick with this interval
	envDelay  = "QMFAULTS_DELAY" // "<first n> <count> <delay>": jobs the child enqueues at start, due after delay
	envLog    = "QMFAULTS_LOG"   // the child's log level (slog's names); error when unset
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

// args is the payload of the test jobs.
type args struct {
	N   int   `json:"n"`
	Due int64 `json:"due"` // real Unix ms before which the job must not run
}

// childMain runs a worker process: it runs t.Job jobs until SIGTERM,
// recording each execution ("<n> <attempt> <real Unix ms>") in the file
// named by envOut, then prints its WorkerStats as "stats processed=…
// lease_lost=…". Its clock is off by envSkew, if set.
func childMain(mode string) int {
	if d, err := time.ParseDuration(os.Getenv(envSkew)); err == nil {
		clock.SetOffset(d)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	out, err := os.OpenFile(os.Getenv(envOut), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer out.Close()
	var mu sync.Mutex
	record := queuemax.WorkMiddlewareFunc(func(ctx context.Context, job *queuemax.Job, next func(context.Context) (any, error)) (any, error) {
		if job.Task != "t.Job" {
			return next(ctx)
		}
		var a args
		if err := json.Unmarshal(job.Payload, &a); err != nil {
			return nil, err
		}
		mu.Lock()
		_, err := fmt.Fprintf(out, "%d %d %d\n", a.N, job.Attempts, time.Now().UnixMilli())
		mu.Unlock()
		if err != nil {
			return nil, err
		}
		return next(ctx)
	})
	slow, _ := time.ParseDuration(os.Getenv(envSlow))
	h := queuemax.Define("t.Job", queuemax.TaskOptions{}, func(context.Context, args) error {
		if slow > 0 {
			time.Sleep(slow) // the work; deliberately deaf to ctx, as a late worker is
		}
		return nil
	})
	handlers := []queuemax.Handler{h}
	if every, err := time.ParseDuration(os.Getenv(envTick)); err == nil {
		tick := queuemax.Define("t.Tick", queuemax.TaskOptions{}, func(context.Context, struct{}) error { return nil })
		tick.Periodic = &queuemax.Periodic{Every: every}
		handlers = append(handlers, tick)
	}
	stuck, _ := time.ParseDuration(os.Getenv(envStuck))
	level := slog.LevelError
	if l := os.Getenv(envLog); l != "" {
		if err := level.UnmarshalText([]byte(l)); err != nil {
			fmt.Println("error", envLog, err)
			return 1
		}
	}
	cfg := queuemax.Config{Handlers: handlers,
		Middleware: []queuemax.JobMiddleware{record}, Workers: 8, HeartbeatInterval: 250 * time.Millisecond,
		StuckTimeout: stuck, RecoveryInterval: 250 * time.Millisecond, DrainTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))}
	c, err := openClient(ctx, os.Getenv(envDSN), os.Getenv(envSchema), cfg)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer c.Close()
	if spec := os.Getenv(envDelay); spec != "" {
		// Jobs due after a delay, by this process's (skewed) clock: what
		// a caller of ScheduleIn asks.
		var first, count int
		var d string
		_, err := fmt.Sscanf(spec, "%d %d %s", &first, &count, &d)
		delay, derr := time.ParseDuration(d)
		if err != nil || derr != nil {
			fmt.Println("error", envDelay, spec, err, derr)
			return 1
		}
		for k := first; k < first+count; k++ {
			due := time.Now().Add(delay).UnixMilli()
			if _, err := c.Enqueue(ctx, "t.Job", args{N: k, Due: due}, queuemax.Opts{RunAt: clock.Now().Add(delay), Priority: queuemax.Ptr(queuemax.PriorityHigh)}); err != nil {
				fmt.Println("error", err)
				return 1
			}
		}
	}
	fmt.Println("running")
	if err := c.Run(ctx); err != nil {
		fmt.Println("error", err)
		return 1
	}
	ws, _ := c.WorkerStats()
	fmt.Printf("stats processed=%d lease_lost=%d\n", ws.Processed, ws.LeaseLost)
	return 0
}

// worker is a running child process.
type worker struct {
	cmd   *exec.Cmd
	out   string // its executions file
	lines chan string
	stats string
	log   *prefixWriter // its stderr: the lines it logged
}

// startWorker starts a child worker on dsn and schema and waits until it
// runs.
func startWorker(t *testing.T, dsn, schema string, stuck time.Duration, env ...string) *worker {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{out: filepath.Join(t.TempDir(), "executions"), lines: make(chan string, 16)}
	w.cmd = exec.Command(exe, "-test.run=^$")
	w.cmd.Env = append(os.Environ(), envChild+"=worker", envDSN+"="+dsn, envSchema+"="+schema, envOut+"="+w.out,
		envStuck+"="+stuck.String())
	w.cmd.Env = append(w.cmd.Env, env...)
	w.log = &prefixWriter{t: t}
	w.cmd.Stderr = w.log
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill(); w.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	if l := <-w.lines; l != "running" {
		t.Fatalf("worker: %q", l)
	}
	return w
}

// stop ends the worker with SIGTERM and returns its stats line.
func (w *worker) stop(t *testing.T) (processed, leaseLost int64) {
	t.Helper()
	w.cmd.Process.Signal(syscall.SIGTERM)
	for l := range w.lines {
		if strings.HasPrefix(l, "stats ") {
			w.stats = l
		} else {
			t.Errorf("worker: %s", l)
		}
	}
	if err := w.cmd.Wait(); err != nil {
		t.Errorf("worker exit: %v", err)
	}
	fmt.Sscanf(w.stats, "stats processed=%d lease_lost=%d", &processed, &leaseLost)
	return processed, leaseLost
}

// execution is one run of a job's handler.
type execution struct {
	attempt, worker int
	at              int64 // real Unix ms
}

// executions reads the workers' files: every n's executions.
func executions(t *testing.T, ws []*worker) map[int][]execution {
	t.Helper()
	out := make(map[int][]execution)
	for i, w := range ws {
		b, err := os.ReadFile(w.out)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l == "" {
				continue
			}
			f := strings.Fields(l)
			n, _ := strconv.Atoi(f[0])
			a, _ := strconv.Atoi(f[1])
			var at int64
			if len(f) > 2 {
				at, _ = strconv.ParseInt(f[2], 10, 64)
			}
			out[n] = append(out[n], execution{a, i, at})
		}
	}
	return out
}

// verdict checks n jobs 0..n-1 of schema against their executions: each
// stored exactly once and completed, none dead-lettered, each executed at
// least once, no attempt executed twice, the committed attempt among the
// executions. It returns the re-runs (executions beyond one per job) and,
// for each, the worker that ran the earlier attempt.
func verdict(t *testing.T, conn *pgx.Conn, schema string, n int, ex map[int][]execution) (reruns int, rerunBy map[int]int) {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT (payload->>'n')::int, status, attempts FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE task = 't.Job'`)
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		status   string
		attempts int
		copies   int
	}
	jobs := make(map[int]*stored)
	for rows.Next() {
		var k, a int
		var st string
		if err := rows.Scan(&k, &st, &a); err != nil {
			t.Fatal(err)
		}
		if jobs[k] == nil {
			jobs[k] = &stored{status: st, attempts: a}
		}
		jobs[k].copies++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var dead int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "dead_letters"}.Sanitize()).Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if dead != 0 {
		t.Errorf("%d dead letters, want none", dead)
	}
	rerunBy = make(map[int]int)
	bad := 0
	for k := range n {
		j, runs := jobs[k], ex[k]
		report := func(format string, a ...any) {
			if bad++; bad <= 10 {
				t.Errorf("job %d: "+format+" (stored %+v, executions %v)", append([]any{k}, append(a, j, runs)...)...)
			}
		}
		switch {
		case j == nil:
			report("lost: not stored")
			continue
		case j.copies != 1:
			report("stored %d times", j.copies)
		case j.status != "completed":
			report("status %s, want completed", j.status)
		case len(runs) == 0:
			report("never executed")
			continue
		}
		seen := make(map[int]int)
		committed := false
		for _, r := range runs {
			if w, dup := seen[r.attempt]; dup {
				report("attempt %d executed twice (workers %d and %d)", r.attempt, w, r.worker)
			}
			seen[r.attempt] = r.worker
			committed = committed || r.attempt == j.attempts
		}
		if !committed {
			report("the committed attempt %d is not among the executions", j.attempts)
		}
		for _, r := range runs {
			if r.attempt != j.attempts {
				reruns++
				rerunBy[r.worker]++
			}
		}
	}
	if len(jobs) != n {
		t.Errorf("%d distinct jobs stored, want %d", len(jobs), n)
	}
	if bad > 10 {
		t.Errorf("… %d problems in all", bad)
	}
	return reruns, rerunBy
}

// waitDone waits until the n jobs of schema are all completed.
func waitDone(t *testing.T, conn *pgx.Conn, schema string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var done, all int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FROM `+
			pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE task = 't.Job'`).Scan(&done, &all)
		if err == nil && done >= n && done == all {
			return
		}
		if time.Now().After(deadline) {
			var states string
			conn.QueryRow(context.Background(), `SELECT string_agg(status || ' ' || n, ', ') FROM (SELECT status, count(*) AS n FROM `+
				pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE task = 't.Job' GROUP BY 1) s`).Scan(&states)
			var lastErr string
			conn.QueryRow(context.Background(), `SELECT coalesce(max(last_error), '') FROM `+
				pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE task = 't.Job' AND status = 'failed'`).Scan(&lastErr)
			t.Logf("job states: %s; a failure: %s", states, lastErr)
			t.Fatalf("after %v: %d of %d jobs completed (%d stored), err %v", within, done, n, all, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// doneAll reports whether the store holds exactly n jobs of t.Job, all
// completed.
func doneAll(t *testing.T, conn *pgx.Conn, schema string, n int) bool {
	t.Helper()
	var done, all int
	err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FROM `+
		pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE task = 't.Job'`).Scan(&done, &all)
	if err != nil {
		t.Fatal(err)
	}
	return done == n && all == n
}

// prefixWriter passes a child's stderr to the test log.
type prefixWriter struct {
	t     *testing.T
	mu    sync.Mutex
	count int // lines written
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		p.count++
		p.t.Log("child:", l)
	}
	return len(b), nil
}

// Lines returns how many lines the child has written to stderr.
func (p *prefixWriter) Lines() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

// openClient opens a client on the PostgreSQL store of dsn in schema.
func openClient(ctx context.Context, dsn, schema string, cfg queuemax.Config) (*queuemax.Client, error) {
	st, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	cfg.Store = st
	if len(cfg.Handlers) == 0 {
		// A producer may enqueue before the workers have published their
		// tasks (the documented opt-in for producers deployed first).
		cfg.AllowUnknownTasks = true
	}
	return queuemax.Open(ctx, cfg)
}
