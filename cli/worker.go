package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/queuemax/queuemax"
)

var workerCommand = &command{
	name:    "worker",
	args:    "[--tasks A,B] [--concurrency C] [--workers N] [flags]",
	summary: "run jobs (in a binary built with a task registry)",
	help: `
Worker runs the jobs of the binary's tasks (all of them, or those named by
--tasks, short names accepted) until SIGINT or SIGTERM, then drains:
running jobs get --drain-timeout to finish, the rest return to pending
without spending an attempt. A second signal during the drain stops at
once: the running jobs are cancelled and released to pending without
spending an attempt (another worker may run them at once), and the
process exits within a few seconds. A program running workers in its own
main gets the same behaviour from Client.RunUntilSignal. It also runs the
periodic scheduler of its periodic tasks, recovers orphans and cleans up
old jobs.

Each of the --workers engines claims and runs up to --concurrency jobs at
once with its own database connections; one engine is enough for most
loads, since claims are batched and SQLite has one writer per shard.

Live throughput is shown on a terminal as a line updated in place, and as
a plain line every --interval otherwise.

A Go program cannot load a function by name: the tasks are those compiled
into the binary, whose main calls cli.Main(os.Args[1:], tasks.Handlers()).
The queuemax command has none and cannot run workers.`,
	run: runWorker,
}

func runWorker(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	var only listFlag
	fs.Var(&only, "tasks", "run only the tasks `A,B` (repeatable; default all)")
	concurrency := fs.Int("concurrency", 10, "run up to `C` jobs at once in each engine")
	workers := fs.Int("workers", 1, "run `N` engines in this process, each with its own connections")
	drain := fs.Duration("drain-timeout", 30*time.Second, "give running jobs `DURATION` to finish after a signal")
	interval := fs.Duration("interval", 10*time.Second, "print a status line every `DURATION` when standard output is not a terminal")
	mkdir := fs.Bool("create", false, "create the data dir and shard files if missing")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	if len(r.handlers) == 0 {
		return usagef("this binary has no tasks: a worker runs the tasks compiled into it, so build one whose main calls cli.Main(os.Args[1:], tasks.Handlers()) (see examples/tasks/cmd/tasks)")
	}
	switch {
	case *concurrency < 1:
		return usagef("--concurrency %d: want 1 or more", *concurrency)
	case *workers < 1:
		return usagef("--workers %d: want 1 or more", *workers)
	case *drain <= 0:
		return usagef("--drain-timeout %s: want a positive duration", *drain)
	case *interval <= 0:
		return usagef("--interval %s: want a positive duration", *interval)
	}
	handlers := r.handlers
	if len(only) > 0 {
		handlers = nil
		for _, name := range only {
			full, err := r.requireTask(name)
			if err != nil {
				return err
			}
			for _, h := range r.handlers {
				if h.Name == full && !containsHandler(handlers, full) {
					handlers = append(handlers, h)
				}
			}
		}
	}
	mode := readWrite
	if *mkdir {
		mode = create
	}
	host, _ := os.Hostname()
	var clients []*queuemax.Client
	defer func() {
		for _, c := range clients {
			closeClient(c, &err)
		}
	}()
	for i := range *workers {
		c, err := r.open(ctx, mode, "pass --create to make a new queue", func(cfg *queuemax.Config) {
			cfg.Handlers = handlers
			cfg.Workers = *concurrency
			cfg.DrainTimeout = *drain
			if *workers > 1 && cfg.WorkerID == "" {
				cfg.WorkerID = fmt.Sprintf("%s-%d-%d", host, os.Getpid(), i+1)
			}
		})
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}

	c0 := clients[0]
	names := make([]string, len(handlers))
	for i, h := range handlers {
		names[i] = shortTask(h.Name)
		if h.Periodic != nil {
			names[i] += " (" + describeSchedule(h.Periodic) + ")"
		}
	}
	fmt.Fprintf(r.stdout, "worker: %d %s, %d %s × %d job slots, %s (%d shards)\n",
		len(handlers), plural(len(handlers), "task"), *workers, plural(*workers, "engine"), *concurrency, whereLong(c0), c0.Shards())
	fmt.Fprintf(r.stdout, "  tasks: %s\n", strings.Join(names, ", "))
	fmt.Fprintln(r.stdout, "  SIGINT (Ctrl-C) or SIGTERM drains and stops.")

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	jobCtx := runCtx
	if r.p.WorkerContext != nil {
		jobCtx = r.p.WorkerContext(runCtx)
	}
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			if err := c.Run(jobCtx); err != nil {
				errs[i] = fmt.Errorf("engine %d: %w", i+1, err)
				cancelRun(err) // stop the others too
			}
		})
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()

	m := &meter{clients: clients, start: time.Now()}
	p := newProgress(r.stdout, *interval)
	every := *interval
	if p.tty {
		every = 500 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	// The signals stay caught while the engines drain (also SIGINT when
	// the process started with it ignored, under nohup): a second one
	// ends the drain at once, and Run releases the running jobs to pending
	// without spending an attempt before the process exits.
	var sigs chan os.Signal
	if r.stopSignals != nil {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
	}
	signals, aborted := 0, false
	abort := func() {
		if aborted {
			return
		}
		aborted = true
		p.done()
		ws := m.totals()
		fmt.Fprintf(r.stdout, "stopping now: releasing %d running %s to pending (no attempt spent)\n", ws.Running, plural(ws.Running, "job"))
		now, cancel := context.WithCancel(context.Background())
		cancel()
		for _, c := range clients {
			go c.Stop(now) // ctx already done: abort the drain
		}
	}
	draining := runCtx.Done()
	announceDrain := func() {
		draining = nil
		ws := m.totals()
		p.done()
		fmt.Fprintf(r.stdout, "draining: waiting up to %s for %d running %s (signal again to release them and stop)\n",
			*drain, ws.Running, plural(ws.Running, "job"))
		if signals >= 2 {
			abort()
		}
	}
	for running := true; running; {
		select {
		case <-tick.C:
			p.line(m.status(), false)
		case <-draining:
			announceDrain()
		case <-sigs:
			// The first signal is the one that cancelled ctx; one that
			// comes while an engine error drains is a second already.
			signals++
			if draining == nil && (signals >= 2 || ctx.Err() == nil) {
				abort()
			}
		case <-stopped:
			// A stop that comes with the signal (nothing was running) is
			// still announced as a drain, whichever case select picked.
			if draining != nil && runCtx.Err() != nil {
				announceDrain()
			}
			running = false
		}
	}
	p.done()
	ws := m.totals()
	elapsed := time.Since(m.start)
	fmt.Fprintf(r.stdout, "stopped after %s: processed %d, failed %d, retried %d (%.1f jobs/s overall)\n",
		elapsed.Round(100*time.Millisecond), ws.Processed, ws.Failed, ws.Retried,
		float64(ws.Processed+ws.Failed+ws.Retried)/max(elapsed.Seconds(), 1e-3))
	return errors.Join(errs...)
}

func containsHandler(hs []queuemax.Handler, name string) bool {
	for _, h := range hs {
		if h.Name == name {
			return true
		}
	}
	return false
}

// meter adds up the engines' statistics and measures throughput.
type meter struct {
	clients  []*queuemax.Client
	start    time.Time
	lastAt   time.Time
	lastDone int64
}

// totals sums every engine's WorkerStats.
func (m *meter) totals() queuemax.WorkerStats {
	var t queuemax.WorkerStats
	for _, c := range m.clients {
		ws, ok := c.WorkerStats()
		if !ok {
			continue
		}
		t.Concurrency += ws.Concurrency
		t.Running += ws.Running
		t.Processed += ws.Processed
		t.Failed += ws.Failed
		t.Retried += ws.Retried
		t.LeaseLost += ws.LeaseLost
	}
	return t
}

// status returns the live line: counts, backlog and the rate since the
// previous call.
func (m *meter) status() string {
	now := time.Now()
	t := m.totals()
	done := t.Processed + t.Failed + t.Retried
	since := m.lastAt
	if since.IsZero() {
		since = m.start
	}
	rate := float64(done-m.lastDone) / max(now.Sub(since).Seconds(), 1e-3)
	m.lastAt, m.lastDone = now, done
	backlog := ""
	if s, err := m.clients[0].Stats(context.Background()); err == nil {
		backlog = fmt.Sprintf("  pending %d  scheduled %d", s.Pending, s.Scheduled)
	}
	// The rate comes first: on a narrow terminal the end is cut off.
	return fmt.Sprintf("%.1f jobs/s  processed %d  failed %d  retried %d  running %d/%d%s",
		rate, t.Processed, t.Failed, t.Retried, t.Running, t.Concurrency, backlog)
}
