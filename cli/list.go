package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/jsonview"
)

var listCommand = &command{
	name:    "list",
	args:    "[--status S] [--task T] [--tag T] [--shard N] [--limit N] [--json]",
	summary: "list jobs by status, or the dead-letter queue",
	help: `
List prints stored jobs, newest first, with their task, status, priority,
attempts, age and payload, and a TAGS column when a listed job has tags.
--status dead lists the dead-letter queue (as dlq list does); beside other
statuses (--status failed,dead) it lists their jobs, then the dead letters
(--json: {"jobs": [...], "dead_letters": [...]}).
Completed jobs are kept for the queue's completed-job retention
(QUEUE_MAX_COMPLETED_RETENTION, default 1h; 0 keeps only those with a
result), so --status completed shows what succeeded and when. --tag lists
only jobs with that tag.
When a listed job is unique, a UNIQUE column shows the first digits of its
key (--json prints "unique_key" whole); when one recorded job steps, a
STEPS column shows how many are done and a running step's cursor (show ID
prints them all).

--task takes the full task name or a short one (SendEmail), resolved
against the binary's task registry or, without one, the store's task
catalogue (the tasks workers published). The data directory is opened
read-only.`,
	run: runList,
}

// listFilters are the flags list and dlq list share.
type listFilters struct {
	task  string
	shard optInt // not given: every shard
	limit int
	json  bool
}

func (f *listFilters) register(fs *flag.FlagSet) {
	fs.StringVar(&f.task, "task", "", "only jobs of task `NAME`")
	fs.Var(&f.shard, "shard", "only shard `N`")
	fs.IntVar(&f.limit, "limit", 50, "show at most `N` rows")
	fs.BoolVar(&f.json, "json", false, "print JSON")
}

// params checks the filters and returns them as ListParams. --task is
// resolved as enqueue resolves it: against the binary's registry, or, for
// a binary without one, the store's task catalogue (a short name that
// matches one of them becomes its full name; others are kept as given).
func (f *listFilters) params(ctx context.Context, r *runner, c *queuemax.Client) (queuemax.ListParams, error) {
	p := queuemax.ListParams{Limit: f.limit}
	if f.limit < 1 {
		return p, usagef("--limit %d: want 1 or more", f.limit)
	}
	if err := checkShard(f.shard, c); err != nil {
		return p, err
	}
	if f.shard.set {
		p.Shard = queuemax.Ptr(f.shard.v)
	}
	task, err := r.filterTask(f.task)
	if err == nil && task != "" && len(r.handlers) == 0 {
		if full, lerr := r.storeResolver(ctx, c)(task); lerr == nil {
			task = full
		}
	}
	p.Task = task
	return p, err
}

// checkShard refuses a --shard outside the data dir's shards; list, dlq
// list and stats share it.
func checkShard(shard optInt, c *queuemax.Client) error {
	if shard.set && (shard.v < 0 || shard.v >= c.Shards()) {
		return usagef("--shard %d: the data dir has %d shards (0–%d)", shard.v, c.Shards(), c.Shards()-1)
	}
	return nil
}

// listJobs lists the jobs of p with any of sts (every status if none),
// newest first, at most p.Limit, in one read per shard: a job that moves
// between two of the statuses meanwhile is listed once, never missed.
func listJobs(ctx context.Context, c *queuemax.Client, p queuemax.ListParams, sts []queuemax.Status) ([]*queuemax.Job, error) {
	p.Statuses = sts
	return c.Jobs(ctx, p)
}

func runList(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	var statuses listFlag
	fs.Var(&statuses, "status", "only jobs with status `S`: pending, scheduled, processing, failed, completed, cancelled (repeatable, or a comma list), or dead for the dead-letter queue (default all)")
	var f listFilters
	f.register(fs)
	tag := fs.String("tag", "", "only jobs with tag `T`")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	dead := slices.Contains(statuses, "dead")
	if *tag != "" && dead {
		return usagef("--tag does not apply to --status dead (dead letters keep no tags)")
	}
	var sts []queuemax.Status
	for _, s := range statuses {
		if s == "dead" || s == "all" {
			continue
		}
		st, err := queuemax.ParseStatus(s)
		if err != nil {
			return usagef("--status %q: want pending, scheduled, processing, failed, completed, cancelled, dead or all", s)
		}
		if !slices.Contains(sts, st) {
			sts = append(sts, st)
		}
	}
	if slices.Contains(statuses, "all") {
		sts = nil
	}
	if _, err := r.filterTask(f.task); err != nil {
		return err
	}
	c, err := r.open(ctx, readOnly, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	p, err := f.params(ctx, r, c)
	if err != nil {
		return err
	}
	// dead beside other statuses: those jobs, then the dead letters.
	withDead := dead && (len(sts) > 0 || slices.Contains(statuses, "all"))
	if dead && !withDead {
		return r.printDeadLetters(ctx, c, p, f.json)
	}
	dp := p
	p.Tag = *tag
	jobs, err := listJobs(ctx, c, p, sts)
	if err != nil {
		return err
	}
	if f.json {
		out := make([]jsonview.Job, len(jobs))
		for i, j := range jobs {
			out[i] = jsonview.NewJob(j)
		}
		if !withDead {
			return writeJSON(r.stdout, out)
		}
		dls, err := c.DeadLetters(ctx, dp)
		if err != nil {
			return err
		}
		dout := make([]jsonview.DeadLetter, len(dls))
		for i, d := range dls {
			dout[i] = jsonview.NewDeadLetter(d)
		}
		return writeJSON(r.stdout, map[string]any{"jobs": out, "dead_letters": dout})
	}
	if err := r.printJobs(jobs, sts, p); err != nil || !withDead {
		return err
	}
	fmt.Fprintln(r.stdout, "\ndead letters:")
	return r.printDeadLetters(ctx, c, dp, false)
}

// printJobs prints list's job table (or that there are none).
func (r *runner) printJobs(jobs []*queuemax.Job, sts []queuemax.Status, p queuemax.ListParams) error {
	if len(jobs) == 0 {
		what := "jobs"
		if len(sts) > 0 {
			names := make([]string, len(sts))
			for i, st := range sts {
				names[i] = string(st)
			}
			what = strings.Join(names, " or ") + " jobs"
		}
		if p.Tag != "" {
			what += fmt.Sprintf(" tagged %q", p.Tag)
		}
		fmt.Fprintf(r.stdout, "no %s%s\n", what, r.fullNameHint(p.Task))
		return nil
	}
	now := time.Now()
	tagged := slices.ContainsFunc(jobs, func(j *queuemax.Job) bool { return len(j.Tags) > 0 })
	// The UNIQUE column (a unique job's key, shortened) appears only when
	// a listed job has one.
	unique := slices.ContainsFunc(jobs, func(j *queuemax.Job) bool { return j.UniqueKey != "" })
	// The STEPS column (job steps done, and a running step's cursor)
	// appears only when a listed job recorded steps.
	stepped := slices.ContainsFunc(jobs, func(j *queuemax.Job) bool { return len(j.Steps) > 0 })
	cols := []string{"ID", "SHARD", "TASK", "STATUS", "PRIORITY", "TRIES", "CREATED", "DETAIL", "PAYLOAD"}
	if tagged {
		cols = slices.Insert(cols, 8, "TAGS")
	}
	if unique {
		cols = slices.Insert(cols, len(cols)-1, "UNIQUE")
	}
	if stepped {
		cols = slices.Insert(cols, len(cols)-1, "STEPS")
	}
	t := newTable(r.stdout, cols...)
	for _, j := range jobs {
		row := []string{j.ID.String(), strconv.Itoa(j.Shard), shortTask(j.Task) + queueTag(j.Queue), string(j.Status), j.Priority.String(),
			tries(j), ago(j.CreatedAt, now), detail(j, now), clip(string(j.Payload), 50)}
		if tagged {
			tags := strings.Join(j.Tags, ",")
			if tags == "" {
				tags = "-"
			}
			row = slices.Insert(row, 8, clip(tags, 40))
		}
		if unique {
			row = slices.Insert(row, len(row)-1, uniqueCol(j.UniqueKey))
		}
		if stepped {
			row = slices.Insert(row, len(row)-1, stepsCol(j))
		}
		t.row(row...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(jobs) == p.Limit {
		fmt.Fprintf(r.stdout, "(first %d shown; use --limit for more)\n", p.Limit)
	}
	return nil
}

// uniqueCol is the UNIQUE column: the key's first 12 digits (list --json
// prints it whole), or "-".
func uniqueCol(key string) string {
	switch {
	case key == "":
		return "-"
	case len(key) > 12:
		return key[:12]
	}
	return key
}

// tries is the TRIES column: attempts of max attempts, and the snoozes
// (runs that spent no attempt) if any.
func tries(j *queuemax.Job) string {
	s := fmt.Sprintf("%d/%d", j.Attempts, j.MaxAttempts)
	if j.Snoozes > 0 {
		s += fmt.Sprintf(" +%d snoozed", j.Snoozes)
	}
	return s
}

// detail is the DETAIL column: what the job waits for or how it ended.
func detail(j *queuemax.Job, now time.Time) string {
	switch j.Status {
	case queuemax.StatusScheduled:
		s := "runs " + ago(j.NextRetryAt, now)
		if j.LastError != "" {
			s += " after: " + j.LastError
		}
		return clip(s, 60)
	case queuemax.StatusProcessing:
		s := fmt.Sprintf("on %s, started %s", j.WorkerID, ago(j.StartedAt, now))
		if j.CancelRequested {
			s = "cancel requested; " + s
		}
		return clip(s, 60)
	case queuemax.StatusFailed:
		return clip(j.LastError, 60)
	case queuemax.StatusCompleted:
		s := "finished " + ago(j.CompletedAt, now)
		if j.Result != nil {
			s += ", result " + string(j.Result)
		}
		return clip(s, 60)
	case queuemax.StatusPending:
		if j.Held != "" {
			return clip("held: "+j.Held, 120)
		}
		if j.LastError != "" {
			return clip("retry after: "+j.LastError, 60)
		}
	}
	return "-"
}

// printDeadLetters prints dead-letter rows for list --status dead and dlq
// list.
func (r *runner) printDeadLetters(ctx context.Context, c *queuemax.Client, p queuemax.ListParams, asJSON bool) error {
	dls, err := c.DeadLetters(ctx, p)
	if err != nil {
		return err
	}
	if asJSON {
		out := make([]jsonview.DeadLetter, len(dls))
		for i, d := range dls {
			out[i] = jsonview.NewDeadLetter(d)
		}
		return writeJSON(r.stdout, out)
	}
	if len(dls) == 0 {
		fmt.Fprintf(r.stdout, "no dead letters%s\n", r.fullNameHint(p.Task))
		return nil
	}
	now := time.Now()
	t := newTable(r.stdout, "SHARD", "DLQ ID", "JOB", "TASK", "TRIES", "FAILED", "ERROR", "PAYLOAD")
	for _, d := range dls {
		job := "-"
		if d.OriginalJobID != 0 {
			job = d.OriginalJobID.String()
		}
		t.row(strconv.Itoa(d.Shard), strconv.FormatInt(d.ID, 10), job, shortTask(d.Task), strconv.Itoa(d.Attempts),
			ago(d.FailedAt, now), clip(d.Error, 60), clip(string(d.Payload), 40))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(dls) == p.Limit {
		fmt.Fprintf(r.stdout, "(first %d shown; use --limit for more)\n", p.Limit)
	}
	return nil
}

// fullNameHint explains, after an empty listing, that a binary without a
// task registry found no task of that name in the task catalogue.
func (r *runner) fullNameHint(task string) string {
	if task == "" || len(r.handlers) > 0 || strings.Contains(task, "/") {
		return ""
	}
	return fmt.Sprintf(" of task %q (no task the store's task catalogue knows has that name)", task)
}
