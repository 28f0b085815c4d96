package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

var workersCommand = &command{
	name:    "workers",
	args:    "[--json]",
	summary: "list the live workers of the queue",
	help: `
Workers lists the worker registry: every process whose Run is active on the
queue, with its host and pid, when it started and last refreshed its entry,
the tasks it runs (all: a catch-all handler), its concurrency, the jobs it
is running, and its circuit breakers and rate limits. A worker refreshes
its entry every heartbeat interval (HEARTBEAT_INTERVAL, at least 1s apart)
and removes it on a clean stop; the entry of a process that died lapses
after three refreshes, and no sooner than STUCK_TIMEOUT.
The data directory is opened read-only.`,
	run: runWorkers,
}

func runWorkers(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	c, jsonOut, err := r.openListing(ctx, cmd, args)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	ws, err := c.Workers(ctx)
	if err != nil {
		return err
	}
	if jsonOut {
		return writeJSON(r.stdout, map[string]any{"workers": ws})
	}
	if len(ws) == 0 {
		fmt.Fprintln(r.stdout, "no live workers")
		return nil
	}
	now := time.Now()
	t := newTable(r.stdout, "ID", "HOST", "PID", "STARTED", "SEEN", "CONCURRENCY", "RUNNING", "TASKS", "BREAKERS", "RATE LIMITS")
	for _, w := range ws {
		t.row(w.ID, w.Host, strconv.Itoa(w.PID), ago(w.StartedAt, now), ago(w.UpdatedAt, now),
			strconv.Itoa(w.Concurrency), strconv.Itoa(w.Running), workerTasks(w), workerBreakers(w), workerLimits(w))
	}
	return t.flush()
}

func workerTasks(w queuemax.WorkerInfo) string {
	if len(w.Tasks) == 0 {
		return "all"
	}
	short := make([]string, len(w.Tasks))
	for i, task := range w.Tasks {
		short[i] = shortTask(task)
	}
	return strings.Join(short, ",")
}

// workerBreakers lists the breakers that are not closed, or "closed".
func workerBreakers(w queuemax.WorkerInfo) string {
	var out []string
	for _, task := range slices.Sorted(maps.Keys(w.Breakers)) {
		if st := w.Breakers[task]; st != "closed" {
			out = append(out, shortTask(task)+"="+st)
		}
	}
	if len(out) == 0 {
		return "closed"
	}
	return strings.Join(out, ",")
}

func workerLimits(w queuemax.WorkerInfo) string {
	if len(w.RateLimits) == 0 {
		return "-"
	}
	var out []string
	for _, task := range slices.Sorted(maps.Keys(w.RateLimits)) {
		rl := w.RateLimits[task]
		name := task
		if task != "*" {
			name = shortTask(task)
		}
		out = append(out, fmt.Sprintf("%s=%d/%s (%.1f left)", name, rl.Limit, rl.Per, rl.Tokens))
	}
	return strings.Join(out, ",")
}
