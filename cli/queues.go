package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

var queuesCommand = &command{
	name:    "queues",
	args:    "[--json] | limit NAME [--rate N/UNIT] [--concurrency N] [--clear]",
	summary: "list the named queues: counts, paused state and limits; set a queue's global limits",
	help: `
Queues lists every queue that has pending, scheduled or running jobs or was
ever paused, with its counts over every shard and whether it is paused. Jobs
without a queue are in the queue named default; LIMITS shows a queue's
global limits.
` + queuesLimitHelp,
	run: runQueues,
}

func runQueues(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	if len(args) > 0 && args[0] == "limit" {
		return runQueuesLimit(r, ctx, cmd, args[1:]) // queues_limit.go
	}
	c, jsonOut, err := r.openListing(ctx, cmd, args)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	qs, err := c.Queues(ctx)
	if err != nil {
		return err
	}
	if jsonOut {
		if qs == nil {
			qs = []queuemax.QueueInfo{}
		}
		return writeJSON(r.stdout, qs)
	}
	if len(qs) == 0 {
		fmt.Fprintln(r.stdout, "no queues: no job is waiting or running, and none was ever paused")
		return nil
	}
	return printQueues(r.stdout, qs, time.Now())
}

// printQueues writes the queue table of queues and stats.
func printQueues(w io.Writer, qs []queuemax.QueueInfo, now time.Time) error {
	cols := []string{"QUEUE", "PENDING", "SCHEDULED", "PROCESSING", "PAUSED"}
	limits := limitsColumn(qs)
	if limits {
		cols = append(cols, "LIMITS")
	}
	t := newTable(w, cols...)
	for _, q := range qs {
		paused := "no"
		if q.Paused {
			paused = "yes, " + ago(q.PausedAt, now)
		}
		row := []string{q.Name, strconv.FormatInt(q.Pending, 10), strconv.FormatInt(q.Scheduled, 10), strconv.FormatInt(q.Processing, 10), paused}
		if limits {
			row = append(row, q.Limits.String())
		}
		t.row(row...)
	}
	return t.flush()
}

// queueTag marks a job of a named queue in listings: " @emails"; nothing
// for the default queue.
func queueTag(q string) string {
	if q == "" || q == queuemax.DefaultQueue {
		return ""
	}
	return " @" + q
}

// showQueues reports whether stats prints the queue table: when some queue
// other than the default one exists, or one is paused.
func showQueues(qs []queuemax.QueueInfo) bool {
	for _, q := range qs {
		if q.Name != queuemax.DefaultQueue || q.Paused || !q.Limits.IsZero() {
			return true
		}
	}
	return false
}

var pauseCommand = &command{
	name:    "pause",
	args:    "--queue NAME [--json]",
	summary: "pause a queue on every worker",
	help: `
Pause pauses one queue (--queue NAME; default names the jobs without a
queue). Every worker of every process that shares the queue stops starting
its jobs from its next claim, within a poll interval; running jobs finish.
Enqueues still store jobs, which wait. The pause is stored: it lasts until
resume, across restarts. Pausing a paused queue is not an error.`,
	run: func(r *runner, ctx context.Context, cmd *command, args []string) error {
		return runPauseResume(r, ctx, cmd, args, true)
	},
}

var resumeCommand = &command{
	name:    "resume",
	args:    "--queue NAME [--json]",
	summary: "resume a paused queue",
	help: `
Resume resumes one paused queue (--queue NAME): workers claim its waiting
jobs again from their next claim. Resuming a queue that is not paused is not
an error.`,
	run: func(r *runner, ctx context.Context, cmd *command, args []string) error {
		return runPauseResume(r, ctx, cmd, args, false)
	},
}

func runPauseResume(r *runner, ctx context.Context, cmd *command, args []string, pause bool) (err error) {
	fs := r.newFlagSet(cmd.name)
	name := fs.String("queue", "", "the queue `NAME`")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	if *name == "" {
		return usagef("--queue is required")
	}
	if err := queuemax.CheckQueueName(*name); err != nil {
		return usagef("--queue: %s", strings.TrimPrefix(err.Error(), "queuemax: "))
	}
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	verb := "paused"
	if pause {
		err = c.Pause(ctx, *name)
	} else {
		verb = "resumed"
		err = c.Resume(ctx, *name)
	}
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"queue": *name, "paused": pause})
	}
	fmt.Fprintf(r.stdout, "%s queue %s\n", verb, *name)
	return nil
}
