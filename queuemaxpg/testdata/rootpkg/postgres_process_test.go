package queuemax

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax/runtime/schedule"
)

// These tests run several OS processes (the test binary re-executed, see
// process_test.go) on one PostgreSQL schema: many hosts, one queue.

// pgChildMain runs the PostgreSQL-only child modes; ok is false for a mode
// it does not know.
func pgChildMain(ctx context.Context, mode, dir string, say func(string, ...any)) (code int, ok bool) {
	dsn, schema := os.Getenv(childDSNEnv), os.Getenv(childSchemaEnv)
	var sayMu sync.Mutex // handlers run concurrently; say is not safe for that
	unsafeSay := say
	say = func(format string, args ...any) {
		sayMu.Lock()
		defer sayMu.Unlock()
		unsafeSay(format, args...)
	}
	switch mode {
	case "pgrun":
		// Run every job of t.Count, recording each execution in a table,
		// until the queue has no work left.
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			say("error %v", err)
			return 1, true
		}
		defer pool.Close()
		table := pgx.Identifier{schema, "executions"}.Sanitize()
		h := Define("t.Count", TaskOptions{}, func(ctx context.Context, a echoArgs) error {
			_, err := pool.Exec(ctx, `INSERT INTO `+table+` (n, pid) VALUES ($1, $2)`, a.N, os.Getpid())
			return err
		})
		c, err := Open(ctx, childConfig("", 0, Config{Handlers: []Handler{h}, Workers: 8,
			Logger: slog.New(slog.DiscardHandler)}))
		if err != nil {
			say("error %v", err)
			return 1, true
		}
		defer c.Close()
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		say("running")
		for {
			select {
			case err := <-done:
				cancel()
				if err != nil {
					say("error %v", err)
					return 1, true
				}
				return 0, true
			case <-time.After(20 * time.Millisecond):
			}
			if has, err := c.st.HasWork(ctx); err == nil && !has {
				cancel()
			}
		}
	case "pgdrop":
		// Job 0 blocks until the file "go" exists; the others finish at
		// once. Every connection of this process is named, so the parent
		// can cut them all.
		goFile := filepath.Join(dir, "go")
		h := DefineResult("t.Drop", TaskOptions{}, func(ctx context.Context, a echoArgs) (string, error) {
			say("started %d", a.N)
			for a.N == 0 {
				if _, err := os.Stat(goFile); err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			return "child", nil
		})
		st, err := pgHook.Open(ctx, dsn+"&application_name="+schema+"_child", schema, 0)
		if err != nil {
			say("error %v", err)
			return 1, true
		}
		c, err := Open(ctx, Config{Store: st, Handlers: []Handler{h},
			Logger: slog.New(slog.DiscardHandler), HeartbeatInterval: 100 * time.Millisecond, StuckTimeout: 20 * time.Second,
			RecoveryInterval: 100 * time.Millisecond, DrainTimeout: time.Second})
		if err != nil {
			say("error %v", err)
			return 1, true
		}
		defer c.Close()
		if err := c.Run(ctx); err != nil {
			say("error %v", err)
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func TestPostgresProcesses_NeverClaimTheSameJob(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
	pgExec(t, dsn, `CREATE TABLE `+pgx.Identifier{schema, "executions"}.Sanitize()+` (n integer NOT NULL, pid integer NOT NULL)`)
	const n = 1500
	params := make([]EnqueueParams, n)
	for i := range params {
		params[i] = EnqueueParams{Task: "t.Count", Payload: echoArgs{i}}
	}
	if _, err := b.c.EnqueueMany(b.ctx, params); err != nil {
		t.Fatal(err)
	}
	var kids []*child
	for range 3 {
		kids = append(kids, startChild(t, "pgrun", t.TempDir(), 1, pgEnv(dsn, schema)...))
	}
	for i, k := range kids {
		for l := range k.lines {
			if strings.HasPrefix(l, "error") {
				t.Fatalf("child %d: %s", i, l)
			}
		}
		if err := k.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(b.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var total, distinct, procs int
	if err := conn.QueryRow(b.ctx, `SELECT count(*), count(DISTINCT n), count(DISTINCT pid) FROM `+
		pgx.Identifier{schema, "executions"}.Sanitize()).Scan(&total, &distinct, &procs); err != nil {
		t.Fatal(err)
	}
	if total != n || distinct != n {
		t.Errorf("executions = %d of %d distinct jobs, want each of %d exactly once", total, distinct, n)
	}
	t.Logf("%d jobs run by %d processes", total, procs)
	if s, _ := b.c.Stats(b.ctx); s.Pending+s.Processing != 0 || s.TotalProcessed != n {
		t.Errorf("stats = %+v, want all %d processed", s, n)
	}
}

func TestPostgresProcesses_KilledWorkerJobIsRecovered(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
	id, err := b.c.Enqueue(b.ctx, "t.Long", echoArgs{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	kid := startChild(t, "hang", t.TempDir(), 1, pgEnv(dsn, schema)...)
	kid.expect(t, "started")
	kid.cmd.Process.Signal(syscall.SIGKILL)
	kid.cmd.Wait()

	var runs int
	h := DefineResult("t.Long", TaskOptions{}, func(context.Context, echoArgs) (string, error) { runs++; return "survivor", nil })
	w := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: []Handler{h}, HeartbeatInterval: 50 * time.Millisecond,
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

func TestPostgresProcesses_PausedWorkerLateCompletionRejected(t *testing.T) {
	t.Parallel()
	needStop(t)
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	dir := t.TempDir()
	b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
	id, err := b.c.Enqueue(b.ctx, "t.Long", echoArgs{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	kid := startChild(t, "late", dir, 1, pgEnv(dsn, schema)...)
	kid.expect(t, "started")
	kid.cmd.Process.Signal(sigStop)

	h := DefineResult("t.Long", TaskOptions{}, func(context.Context, echoArgs) (string, error) { return "survivor", nil })
	w := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: []Handler{h}, HeartbeatInterval: 50 * time.Millisecond,
		StuckTimeout: 300 * time.Millisecond, RecoveryInterval: 50 * time.Millisecond})
	evs := collect(w.c, EventCompleted)
	stop := run(t, w.c)
	waitEvents(t, evs, 1)
	stop()

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
	if s, _ := w.c.Stats(w.ctx); s.TotalProcessed != 1 {
		t.Errorf("total processed = %d, want 1", s.TotalProcessed)
	}
}

// Schedulers in three processes and two in this one tick at the same
// instants: every slot is enqueued exactly once, and a scheduler started
// afterwards (a restart) fires none of the slots again.
func TestPostgresProcesses_PeriodicSlotsOnce(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	const ticks = 30
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := periodicHandler("t.Tick", Periodic{Every: time.Minute})
	b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: []Handler{h}})
	var scheds []*schedule.Scheduler
	for range 2 {
		s := newTestScheduler(t, setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: []Handler{h}}).c)
		if err := s.Register(b.ctx, t0); err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	type schedKid struct {
		cmd     *exec.Cmd
		in      *os.File
		replies *bufio.Scanner
	}
	startSched := func() *schedKid {
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=sched", childDirEnv+"="+t.TempDir(), childShardEnv+"=1")
		cmd.Env = append(cmd.Env, pgEnv(dsn, schema)...)
		cmd.Stderr = os.Stderr
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = r
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		t.Cleanup(func() { w.Close(); cmd.Process.Kill(); cmd.Wait() })
		return &schedKid{cmd: cmd, in: w, replies: bufio.NewScanner(stdout)}
	}
	tick := func(kids []*schedKid, at time.Time, local []*schedule.Scheduler) {
		t.Helper()
		for _, k := range kids {
			fmt.Fprintf(k.in, "%d\n", at.UnixNano())
		}
		var wg sync.WaitGroup
		for _, s := range local {
			wg.Go(func() {
				if _, err := s.Tick(b.ctx, at); err != nil {
					t.Errorf("tick: %v", err)
				}
			})
		}
		wg.Wait()
		for i, k := range kids {
			if !k.replies.Scan() || k.replies.Text() != "ok" {
				t.Fatalf("child scheduler %d at %v: %q %v", i, at, k.replies.Text(), k.replies.Err())
			}
		}
	}
	kids := []*schedKid{startSched(), startSched(), startSched()}
	for k := 1; k <= ticks; k++ {
		tick(kids, t0.Add(time.Duration(k)*time.Minute), scheds)
	}
	for _, k := range kids {
		k.in.Close()
		if err := k.cmd.Wait(); err != nil {
			t.Fatalf("child scheduler: %v", err)
		}
	}
	count := func() (jobs, runs, distinctJobs int) {
		t.Helper()
		conn, err := pgx.Connect(b.ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE task = 't.Tick'),
			count(*), count(DISTINCT job_id) FROM `+pgx.Identifier{schema, "periodic_runs"}.Sanitize()+` WHERE task = 't.Tick'`).
			Scan(&jobs, &runs, &distinctJobs); err != nil {
			t.Fatal(err)
		}
		return
	}
	if jobs, runs, distinct := count(); jobs != ticks || runs != ticks || distinct != ticks {
		t.Errorf("after %d ticks by 5 schedulers: %d jobs, %d slot rows, %d distinct jobs; want %d of each", ticks, jobs, runs, distinct, ticks)
	}
	// A restarted scheduler process replaying earlier and the last instants
	// finds every slot taken.
	again := startSched()
	for _, k := range []int{1, ticks / 2, ticks} {
		tick([]*schedKid{again}, t0.Add(time.Duration(k)*time.Minute), nil)
	}
	if jobs, runs, _ := count(); jobs != ticks || runs != ticks {
		t.Errorf("after a restart: %d jobs, %d slot rows; want still %d", jobs, runs, ticks)
	}
}

// A process whose every connection to PostgreSQL is cut while it runs a
// job reconnects: it keeps its lease, finishes that job, and its listener
// and pool serve new jobs; nothing is lost or run twice.
func TestPostgresProcesses_ConnectionDropReconnects(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	dir := t.TempDir()
	b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
	first, err := b.c.Enqueue(b.ctx, "t.Drop", echoArgs{0}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	kid := startChild(t, "pgdrop", dir, 1, pgEnv(dsn, schema)...)
	kid.expect(t, "started 0")

	conn, err := pgx.Connect(b.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var cut int
	if err := conn.QueryRow(b.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
		schema+"_child").Scan(&cut); err != nil {
		t.Fatal(err)
	}
	if cut < 2 {
		t.Fatalf("terminated %d of the child's connections, want its pool and its listener", cut)
	}
	// The child's listener reconnects and its pool opens new connections:
	// a job enqueued now is run by it.
	second, err := b.c.Enqueue(b.ctx, "t.Drop", echoArgs{1}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	kid.expect(t, "started 1")
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		j0, err0 := b.c.Job(b.ctx, first)
		j1, err1 := b.c.Job(b.ctx, second)
		if err0 == nil && err1 == nil && j0.IsCompleted() && j1.IsCompleted() {
			if j0.Attempts != 1 || string(j0.Result) != `"child"` {
				t.Errorf("first job = %+v, want completed by the child on its first attempt", j0)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not completed after the drop: %+v %v / %+v %v", j0, err0, j1, err1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	kid.cmd.Process.Signal(syscall.SIGTERM)
	if err := kid.cmd.Wait(); err != nil {
		t.Errorf("child exit: %v", err)
	}
	if s, _ := b.c.Stats(b.ctx); s.TotalProcessed != 2 || s.Processing != 0 {
		t.Errorf("stats = %+v, want 2 processed and none running", s)
	}
}
