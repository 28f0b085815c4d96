// Command demo enqueues typed jobs from the annotated functions in
// examples/tasks and processes them on the embedded SQLite runtime, showing
// progress, then prints the queue's statistics. Run it with make demo (which
// regenerates the task stubs first) or go run ./examples/demo.
//
// The runtime's environment variables apply, as queuemaxenv.Config reads
// them: DATA_DIR, NUM_SHARDS, QUEUE_MAX_RETRIES, CIRCUIT_TIMEOUT,
// QUEUE_MAX_LOG_LEVEL and the others. The demo picks a short retry backoff
// and breaker timeout of its own only where the environment sets none.
// Started on a data directory that already holds jobs (an interrupted run,
// another program's queue), it says so: those jobs run too, and the
// progress line counts only the jobs this run enqueues.
//
// Flags:
//
//	-dir     data directory (default: DATA_DIR, else ./data)
//	-emails  number of SendEmail jobs (default 5000)
//
// Ctrl-C drains: running jobs finish, the rest stay queued for the next run.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/queuemaxenv"
)

func main() {
	dir := flag.String("dir", "", "data directory (default: DATA_DIR, else "+queuemax.DefaultDir+")")
	emails := flag.Int("emails", 5000, "number of SendEmail jobs")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := demoConfig(os.Getenv, *dir)
	if err == nil {
		err = run(ctx, cfg, *emails)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// demoConfig returns the demo's Config: the environment's (queuemaxenv.Config),
// the -dir flag over DATA_DIR, and the demo's own choices where the
// environment leaves a field unset.
func demoConfig(getenv func(string) string, dir string) (queuemax.Config, error) {
	cfg, level, err := queuemaxenv.Config(getenv)
	if err != nil {
		return cfg, fmt.Errorf("environment: %w", err)
	}
	if dir != "" {
		cfg.Dir = dir
	}
	if cfg.Dir == "" {
		cfg.Dir = queuemax.DefaultDir
	}
	if getenv("QUEUE_MAX_LOG_LEVEL") == "" {
		level = slog.LevelError + 4 // the progress line reports outcomes
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.Handlers = tasks.Handlers()
	if cfg.Workers == 0 {
		cfg.Workers = 16
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = 200 * time.Millisecond // short backoff so retries show up within the demo
	}
	if cfg.CircuitTimeout == 0 {
		// The flaky webhook answers 503 often enough to open its task's
		// circuit breaker; probe again after a second (default 60s).
		cfg.CircuitTimeout = time.Second
	}
	return cfg, nil
}

// existingJobs describes what the queue already holds before the demo
// enqueues anything, or "" for an empty queue.
func existingJobs(ctx context.Context, c *queuemax.Client) (string, error) {
	s, err := c.Stats(ctx)
	if err != nil {
		return "", err
	}
	if s.Pending+s.Scheduled+s.Processing+s.Failed+s.Completed+s.DeadLetters == 0 {
		return "", nil
	}
	return fmt.Sprintf("data dir %s already holds jobs: %d pending, %d scheduled, %d processing (held by a running or crashed worker), "+
		"%d failed, %d completed, %d dead letters; waiting jobs run in this demo too, but the progress line counts only its own",
		c.Dir(), s.Pending, s.Scheduled, s.Processing, s.Failed, s.Completed, s.DeadLetters), nil
}

func run(ctx context.Context, cfg queuemax.Config, emails int) error {
	c, err := queuemax.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("queuemax demo: data dir %s, %d shards\n", c.Dir(), c.Shards())
	if msg, err := existingJobs(ctx, c); err != nil {
		return err
	} else if msg != "" {
		fmt.Println(msg)
	}
	t := tasks.New(c)

	// A local webhook receiver: the first call to each /flaky URL answers
	// 503 with Retry-After, later ones 200; /gone answers 404.
	var seen sync.Map
	var pings atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/monitor": // PingMonitor, enqueued every 2s by the scheduler
			pings.Add(1)
		case strings.HasPrefix(r.URL.Path, "/gone"):
			w.WriteHeader(http.StatusNotFound)
		case strings.HasPrefix(r.URL.Path, "/flaky"):
			if _, again := seen.LoadOrStore(r.URL.Path, true); !again {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()

	// Count outcomes of the jobs this run enqueues.
	var mu sync.Mutex
	mine := make(map[queuemax.JobID]bool)
	var done, dead, retried, trips atomic.Int64
	add := func(ids ...queuemax.JobID) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			mine[id] = true
		}
	}

	start := time.Now()
	to := make([]string, emails)
	for i := range to {
		to[i] = fmt.Sprintf("user%d@example.com", i)
	}
	ids, err := t.SendEmail.Map(ctx, to, "Welcome!")
	if err != nil {
		return err
	}
	add(ids...)
	// Malformed addresses fail permanently: straight to the dead-letter queue.
	for _, bad := range []string{"not-an-address", "@nobody", "x@"} {
		id, err := t.SendEmail.Delay(ctx, bad, "Welcome!")
		if err != nil {
			return err
		}
		add(id)
	}
	users := make([]int64, 300)
	for i := range users {
		users[i] = int64(i + 1)
	}
	reportIDs, err := t.GenerateReport.With(queuemax.Opts{Priority: queuemax.Ptr(queuemax.PriorityHigh)}).Map(ctx, users, "2026-10")
	if err != nil {
		return err
	}
	add(reportIDs...)
	for i := range 40 {
		path := fmt.Sprintf("/flaky/%d", i)
		if i%4 == 0 {
			path = fmt.Sprintf("/gone/%d", i)
		}
		id, err := t.CallWebhook.Delay(ctx, srv.URL+path, map[string]string{"event": "signup", "n": fmt.Sprint(i)})
		if err != nil {
			return err
		}
		add(id)
	}
	later, err := t.SendEmail.ScheduleIn(ctx, 2*time.Second, "later@example.com", "Sent two seconds after enqueue")
	if err != nil {
		return err
	}
	add(later)
	cleanup, err := t.CleanupOldData.Delay(ctx)
	if err != nil {
		return err
	}
	add(cleanup)
	mu.Lock()
	total := int64(len(mine))
	mu.Unlock()
	fmt.Printf("enqueued %d jobs in %v (typed stubs from queuemax_gen.go)\n", total, time.Since(start).Round(time.Millisecond))

	// Count the outcomes from the client's events. The buffer holds every
	// event this run can emit (a job retries at most a few times), so the
	// counts stay exact however far the reader falls behind.
	events, unsubscribe := c.SubscribeConfig(&queuemax.SubscribeConfig{ChanSize: int(8*total) + 64,
		Kinds: []queuemax.EventKind{queuemax.EventCircuit, queuemax.EventCompleted, queuemax.EventFailed, queuemax.EventRetried}})
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for e := range events {
			mu.Lock()
			ours := mine[e.JobID]
			mu.Unlock()
			switch {
			case e.Kind == queuemax.EventCircuit && e.To == "open":
				trips.Add(1)
			case !ours:
			case e.Kind == queuemax.EventCompleted:
				done.Add(1)
			case e.Kind == queuemax.EventFailed:
				dead.Add(1)
			case e.Kind == queuemax.EventRetried:
				retried.Add(1)
			}
		}
	}()
	defer func() { unsubscribe(); <-counted }()

	// Run the workers with the tasks' dependencies in their context.
	outbox := &tasks.Outbox{}
	runCtx, stopRun := context.WithCancel(tasks.WithDeps(ctx, tasks.Deps{Mailer: outbox, HTTP: srv.Client(), Retention: outbox,
		MonitorURL: srv.URL + "/monitor"}))
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(runCtx) }()

	tty := isTerminal(os.Stdout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	runStart, lastPrint := time.Now(), time.Time{}
	for finished := false; !finished; {
		select {
		case <-ctx.Done():
			fmt.Println("\ninterrupted: draining")
			finished = true
		case <-tick.C:
		}
		d, x, r := done.Load(), dead.Load(), retried.Load()
		finished = finished || d+x >= total
		if tty || finished || time.Since(lastPrint) >= time.Second {
			lastPrint = time.Now()
			rate := float64(d+x) / time.Since(runStart).Seconds()
			line := fmt.Sprintf("%s %d/%d done  %6.0f jobs/s  retried %d  dead-lettered %d  breaker trips %d  monitor pings %d",
				bar(d+x, total, 30), d+x, total, rate, r, x, trips.Load(), pings.Load())
			if tty {
				fmt.Printf("\r%s", line)
			} else {
				fmt.Println(line)
			}
		}
	}
	if tty {
		fmt.Println()
	}
	stopRun()
	if err := <-runErr; err != nil {
		return err
	}

	if rep, err := t.GenerateReport.Result(ctx, reportIDs[0]); err == nil {
		fmt.Printf("report result for user %d: %d orders, %d cents\n", rep.UserID, rep.Orders, rep.TotalCents)
	}
	fmt.Printf("emails delivered: %d\n", len(outbox.Messages()))
	periodic, err := c.PeriodicTasks(ctx)
	if err != nil {
		return err
	}
	fmt.Println("periodic tasks:")
	for _, p := range periodic {
		last := "never"
		if !p.LastRun.IsZero() {
			last = p.LastRun.Local().Format("15:04:05") + " (" + p.LastOutcome + ")"
		}
		fmt.Printf("  %-20s %-13s last %-22s next %s\n", shortTask(p.Task), p.Schedule, last, p.NextRun.Local().Format("15:04:05"))
	}
	dl, err := c.DeadLetters(ctx, queuemax.ListParams{Limit: 3})
	if err != nil {
		return err
	}
	fmt.Println("dead-letter queue (newest 3):")
	for _, d := range dl {
		fmt.Printf("  job %d %s: %s\n", d.OriginalJobID, shortTask(d.Task), d.Error)
	}
	s, err := c.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("queue stats: pending=%d scheduled=%d processing=%d failed=%d completed=%d dead_letters=%d total_processed=%d circuit=%s shards=%d\n",
		s.Pending, s.Scheduled, s.Processing, s.Failed, s.Completed, s.DeadLetters, s.TotalProcessed, s.CircuitState, s.NumShards)
	return nil
}

func shortTask(name string) string { return name[strings.LastIndex(name, "/")+1:] }

func bar(n, total int64, width int) string {
	if total == 0 {
		total = 1
	}
	full := int(n * int64(width) / total)
	return "[" + strings.Repeat("=", full) + strings.Repeat(" ", width-full) + "]"
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
