package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

var enqueueCommand = &command{
	name:    "enqueue",
	args:    "--task T [--payload JSON] [flags] | --file FILE",
	summary: "add a job, or every job of a JSON Lines or JSON array file",
	help: `
Enqueue stores one job of --task with --payload, a JSON object (default {}),
and prints its ID. Unset options keep the task's defaults when the binary
has a task registry, which also rejects unknown task names (a short name
such as SendEmail is resolved when it matches one task) and payloads that
do not fit the task's parameters: an unknown key, a missing parameter or a
wrong type is refused naming the field. A binary without a registry
(queuemax) resolves --task in the same way against the store's task
catalogue: the tasks every worker that ever ran on this queue published
(their names, earlier names and payload schemas), kept after the workers
stop, so the result does not depend on whether a worker is live. An
ambiguous or unknown name is refused with the near matches; --any-task
stores it as given (for a task whose workers are not deployed yet).

--unique-key makes the job unique by that key (see the README's "Unique
jobs"): while a job of the task with the same key waits or runs, nothing is
stored and enqueue prints "not enqueued: duplicate of" that job (--json:
"duplicate": true). A task unique by its arguments (unique=args) is
deduplicated the same way without the flag.

With --file, every record of the file is enqueued, all or nothing: one
JSON object per line (blank lines skipped) or one JSON array, each record
{"task": ..., "payload": {...}, "priority": 0-2, "max_retries": N,
"key": N, "run_at": "RFC 3339", "unique_key": "K"}. Task names and payloads are checked as for
a single job. The first bad record is named by its line and nothing is
stored. A progress bar is drawn on a terminal.

The data directory must hold a queue unless --create is given.`,
	run: runEnqueue,
}

// enqueued is enqueue --json's output for one job.
type enqueued struct {
	ID    queuemax.JobID `json:"id"`
	Shard int            `json:"shard"`
	Task  string         `json:"task"`
	RunAt *time.Time     `json:"run_at,omitempty"`
	// Duplicate: the job is unique and a stored job (ID) holds its key;
	// nothing was stored.
	Duplicate bool `json:"duplicate,omitempty"`
}

func runEnqueue(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	task := fs.String("task", "", "task `NAME` (full, or short with a registry: SendEmail)")
	payload := fs.String("payload", "{}", "the job's payload, a `JSON` object")
	var prio priorityFlag
	fs.Var(&prio, "priority", "priority `P`: 0 or low, 1 or medium, 2 or high (default: the task's)")
	var key optInt64
	fs.Var(&key, "key", "partition key `K`: jobs with one key share a shard and run in order (default: a random shard)")
	var at timeFlag
	fs.Var(&at, "at", "run at `TIME`, in RFC 3339 (2026-12-01T09:00:00Z)")
	in := fs.Duration("in", 0, "run after `DURATION` (90s, 2h)")
	uniqueKey := fs.String("unique-key", "", "make the job unique by `KEY`: if a waiting or running job of the task holds it, print that job and store nothing")
	var retries optInt
	fs.Var(&retries, "max-retries", "retry a failed job `N` times (default: the task's, or QUEUE_MAX_RETRIES)")
	file := fs.String("file", "", "enqueue every record of `FILE` (JSON Lines or a JSON array)")
	jsonOut := fs.Bool("json", false, "print JSON")
	mkdir := fs.Bool("create", false, "create the data dir and shard files if missing")
	queue := fs.String("queue", "", "put the job in queue `NAME` (default: the task's, or the default queue)")
	anyTask := fs.Bool("any-task", false, "store --task as given even if no task the store knows has that name (workers not deployed yet)")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	mode := readWrite
	if *mkdir {
		mode = create
	}
	if *file != "" {
		for _, name := range []string{"task", "payload", "priority", "key", "at", "in", "max-retries", "queue", "unique-key"} {
			if set[name] {
				return usagef("--%s cannot be combined with --file (each record sets its own)", name)
			}
		}
		return r.enqueueFile(ctx, *file, mode, *jsonOut, *anyTask)
	}

	// Check everything before opening, so that a bad flag changes nothing.
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*payload), &obj); err != nil || obj == nil {
		if !json.Valid([]byte(*payload)) {
			return usagef("--payload is not valid JSON: %v", jsonError(*payload))
		}
		return usagef("--payload must be a JSON object, got %s", clip(*payload, 40))
	}
	switch {
	case !set["task"] && len(r.handlers) > 0:
		return usagef("--task is required (this binary runs: %s)", strings.Join(taskNames(r.handlers), ", "))
	case !set["task"]:
		return usagef(`--task is required (the task's full name; --task "" stores a raw queue-max job)`)
	}
	name, err := r.requireTask(*task)
	if err != nil {
		return err
	}
	var o queuemax.Opts
	if prio.set {
		o.Priority = queuemax.Ptr(prio.p)
	}
	if key.set {
		o.Key = queuemax.Ptr(key.v)
	}
	if *queue != "" {
		if err := queuemax.CheckQueueName(*queue); err != nil {
			return usagef("--queue: %s", strings.TrimPrefix(err.Error(), "queuemax: "))
		}
		o.Queue = *queue
	}
	if set["unique-key"] && *uniqueKey == "" {
		return usagef("--unique-key: want a non-empty key")
	}
	o.UniqueKey = *uniqueKey
	if retries.set {
		if retries.v < 0 {
			return usagef("--max-retries %d: want 0 or more", retries.v)
		}
		o.MaxRetries = queuemax.Ptr(retries.v)
	}
	switch {
	case set["at"] && set["in"]:
		return usagef("--at and --in cannot be combined")
	case set["in"] && *in <= 0:
		return usagef("--in %s: want a positive duration", *in)
	case set["at"]:
		o.RunAt = at.t
	case set["in"]:
		o.RunAt = time.Now().Add(*in)
	}

	c, err := r.open(ctx, mode, "pass --create to make a new queue", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	switch {
	case *anyTask:
		o.AllowUnknownTask = true
	case len(r.handlers) == 0:
		if name, err = r.storeResolver(ctx, c)(name); err != nil {
			return err
		}
	}
	res, err := c.EnqueueResult(ctx, name, json.RawMessage(*payload), o)
	if err != nil {
		return err
	}
	id := res.ID
	out := enqueued{ID: id, Shard: id.Shard(), Task: name, RunAt: timePtr(o.RunAt), Duplicate: res.Duplicate}
	if *jsonOut {
		return writeJSON(r.stdout, out)
	}
	what := "job"
	if name != "" {
		what = shortTask(name) + " job"
	}
	if res.Duplicate {
		// A unique job whose key a stored job holds: nothing was stored.
		fmt.Fprintf(r.stdout, "not enqueued: duplicate of %s %d on shard %d\n", what, id, id.Shard())
		return nil
	}
	fmt.Fprintf(r.stdout, "enqueued %s %d on shard %d", what, id, id.Shard())
	if !o.RunAt.IsZero() {
		fmt.Fprintf(r.stdout, ", to run at %s", stamp(o.RunAt))
	}
	fmt.Fprintln(r.stdout)
	return nil
}

// jsonError returns the decoder's complaint about s.
func jsonError(s string) error {
	var v any
	err := json.Unmarshal([]byte(s), &v)
	if err == nil {
		return nil
	}
	return err
}

// enqueueFile runs enqueue --file.
func (r *runner) enqueueFile(ctx context.Context, path string, mode access, asJSON, anyTask bool) (err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--file: %w", err)
	}
	if len(r.handlers) > 0 {
		if err := r.checkFileTasks(path, data, r.requireTask); err != nil {
			return err
		}
	}
	var allow func(*queuemax.Config)
	if anyTask {
		allow = func(cfg *queuemax.Config) { cfg.AllowUnknownTasks = true }
	}
	c, err := r.open(ctx, mode, "pass --create to make a new queue", allow)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	if len(r.handlers) == 0 && !anyTask {
		if err := r.checkFileTasks(path, data, r.storeResolver(ctx, c)); err != nil {
			return err
		}
	}
	p := newProgress(r.stderr, time.Second)
	n, err := c.EnqueueFile(ctx, path, func(done, total int) {
		if !p.tty {
			return // a bar is for people; scripts get the result line
		}
		note := fmt.Sprintf("%d/%d records checked", done, total)
		if done == total {
			note += fmt.Sprintf(", storing %d jobs…", total)
		}
		p.update(int64(done), int64(total), note, done == total)
	})
	p.done()
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(r.stdout, map[string]any{"file": path, "enqueued": n})
	}
	fmt.Fprintf(r.stdout, "enqueued %d jobs from %s\n", n, path)
	return nil
}

// checkFileTasks rejects the first record whose task resolve (the
// binary's registry, or the store's task catalogue) does not know, or names
// by a short name. Records that do not parse are left for EnqueueFile to report.
func (r *runner) checkFileTasks(path string, data []byte, resolve func(string) (string, error)) error {
	check := func(line int, raw []byte) error {
		var rec struct {
			Task string `json:"task"`
		}
		if json.Unmarshal(raw, &rec) != nil {
			return nil
		}
		if rec.Task == "" {
			if len(r.handlers) == 0 {
				return nil // a raw queue-max job
			}
			return &queuemax.LineError{Path: path, Line: line,
				Err: usagef(`missing "task" (this binary runs: %s)`, strings.Join(taskNames(r.handlers), ", "))}
		}
		full, err := resolve(rec.Task)
		if err != nil {
			return &queuemax.LineError{Path: path, Line: line, Err: err}
		}
		if full != rec.Task {
			// EnqueueFile stores names as written; a short one would
			// never be claimed.
			return &queuemax.LineError{Path: path, Line: line,
				Err: usagef("task %q: write the full name %q in a file", rec.Task, full)}
		}
		return nil
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		dec := json.NewDecoder(bytes.NewReader(data))
		if _, err := dec.Token(); err != nil {
			return nil
		}
		for dec.More() {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return nil
			}
			start := dec.InputOffset() - int64(len(raw))
			if err := check(1+bytes.Count(data[:start], []byte("\n")), raw); err != nil {
				return err
			}
		}
		return nil
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if err := check(i+1, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// storeResolver returns a resolver of task names for a binary without a
// task registry: Client.ResolveTaskName, which resolves against the
// store's task catalogue (the tasks workers ran, kept after they stop), so
// a name resolves the same way whether or not a worker is live. An
// ambiguous or unknown name is a usage error listing the near matches.
func (r *runner) storeResolver(ctx context.Context, c *queuemax.Client) func(string) (string, error) {
	return func(name string) (string, error) {
		full, err := c.ResolveTaskName(ctx, name)
		if err != nil {
			msg := strings.Replace(err.Error(), "(Opts.AllowUnknownTask stores it anyway)", "(--any-task stores it anyway)", 1)
			return "", usagef("%s", strings.TrimPrefix(msg, "queuemax: "))
		}
		return full, nil
	}
}
