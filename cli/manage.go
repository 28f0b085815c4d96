package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

var retryCommand = &command{
	name:    "retry",
	args:    "[ID | --shard N] [--json]",
	summary: "re-queue failed jobs",
	help: `
Retry re-queues failed (dead-lettered) jobs with a fresh attempt budget and
removes their dead-letter rows: every failed job, those of one shard
(--shard), or one job named by its ID (a job ID or shard:seq; --job-id ID
is the deprecated spelling). Dead letters whose
job row was cleaned up are re-queued with dlq requeue.`,
	run: runRetry,
}

func runRetry(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	var shardFlag optInt // not given: every shard
	fs.Var(&shardFlag, "shard", "only shard `N`")
	jobIDFlag := fs.String("job-id", "", "deprecated: give the job `ID` as an argument")
	jsonOut := fs.Bool("json", false, "print JSON")
	pos, err := r.parseID(fs, cmd, args)
	if err != nil {
		return err
	}
	idText, err := r.idArg(cmd, pos, "job-id", *jobIDFlag)
	if err != nil {
		return err
	}
	jobID := &idText
	all := queuemax.AllShards
	shard := &all
	if shardFlag.set {
		shard = &shardFlag.v
		if *shard < 0 {
			return usagef("--shard %d: want a shard number from 0", *shard)
		}
	}
	var id queuemax.JobID
	if *jobID != "" {
		if id, err = queuemax.ParseJobID(*jobID); err != nil {
			return usagef("job ID %q: %v", *jobID, strings.TrimPrefix(err.Error(), "queuemax: "))
		}
		if *shard >= 0 && *shard != id.Shard() {
			return usagef("job %s is in shard %d, not --shard %d", *jobID, id.Shard(), *shard)
		}
	}
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	if *shard >= c.Shards() || (id != 0 && id.Shard() >= c.Shards()) {
		return usagef("shard %d: the data dir has %d shards (0–%d)", max(*shard, id.Shard()), c.Shards(), c.Shards()-1)
	}
	if id != 0 {
		if err := c.RetryJob(ctx, id); err != nil {
			if errors.Is(err, queuemax.ErrJobNotFound) {
				return fmt.Errorf("job %s is not a failed job (or does not exist)", id)
			}
			return err
		}
		if *jsonOut {
			return writeJSON(r.stdout, map[string]any{"retried": 1, "job_id": id})
		}
		fmt.Fprintf(r.stdout, "retried job %s\n", id)
		return nil
	}
	n, err := c.RetryFailed(ctx, *shard)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"retried": n})
	}
	where := "across all shards"
	if *shard >= 0 {
		where = fmt.Sprintf("in shard %d", *shard)
	}
	fmt.Fprintf(r.stdout, "retried %d failed %s %s\n", n, plural(n, "job"), where)
	return nil
}

var cancelCommand = &command{
	name:    "cancel",
	args:    "ID [--json]",
	summary: "cancel a job",
	help: `
Cancel cancels one job, named by its ID (a job ID or shard:seq, as every
command takes it; --job-id ID is the deprecated spelling). A pending or
scheduled job is cancelled at once; a running one is asked to stop, and the
worker running it (in any process) cancels its handler within a heartbeat
interval and records it cancelled, never retried. Cancelling a job that
already finished is an error.`,
	run: runCancel,
}

func runCancel(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	jobID := fs.String("job-id", "", "deprecated: give the job `ID` as an argument")
	jsonOut := fs.Bool("json", false, "print JSON")
	pos, err := r.parseID(fs, cmd, args)
	if err != nil {
		return err
	}
	idText, err := r.idArg(cmd, pos, "job-id", *jobID)
	if err != nil {
		return err
	}
	if idText == "" {
		return usagef("the job's ID is required: %s cancel ID", r.name)
	}
	id, err := queuemax.ParseJobID(idText)
	if err != nil {
		return usagef("job ID %q: %v", idText, strings.TrimPrefix(err.Error(), "queuemax: "))
	}
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	st, err := c.Cancel(ctx, id)
	switch {
	case errors.Is(err, queuemax.ErrJobNotFound):
		return fmt.Errorf("job %s does not exist", id)
	case errors.Is(err, queuemax.ErrJobFinished):
		return fmt.Errorf("cannot cancel: %s", strings.TrimPrefix(err.Error(), "queuemax: "))
	case err != nil:
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"job_id": id, "status": st})
	}
	if st == queuemax.StatusCancelled {
		fmt.Fprintf(r.stdout, "cancelled job %s\n", id)
	} else {
		fmt.Fprintf(r.stdout, "job %s is running: cancellation requested (its worker stops it within a heartbeat)\n", id)
	}
	return nil
}

var dlqCommand = &command{
	name:    "dlq",
	args:    "[list] [--task T] [--shard N] [--limit N] [--json] | requeue (SHARD:DLQID | --all | --task T | --error TEXT)",
	summary: "list or re-queue dead letters",
	help: `
Dlq lists the dead-letter queue, newest first (dlq or dlq list; opened
read-only), or re-queues dead letters (dlq requeue): one, named as an
argument SHARD:DLQID from the SHARD and DLQ ID columns (--shard N --id ID
is the deprecated spelling; retry ID re-queues a failed job by its job
ID), --all, or every dead letter of
--task (full or short name) and/or whose error contains --error TEXT
(case-sensitive). A re-queued job keeps its payload as it was and starts
with a fresh attempt budget; if its queue row was cleaned up, it is
re-created.`,
	run: runDLQ,
}

func runDLQ(r *runner, ctx context.Context, cmd *command, args []string) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		return r.dlqList(ctx, cmd, args)
	case "requeue":
		return r.dlqRequeue(ctx, cmd, args)
	}
	return usagef("unknown dlq command %q (want list or requeue)", sub)
}

func (r *runner) dlqList(ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	var f listFilters
	f.register(fs)
	if err := r.parse(fs, cmd, args); err != nil {
		return err
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
	return r.printDeadLetters(ctx, c, p, f.json)
}

func (r *runner) dlqRequeue(ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	var shard optInt
	fs.Var(&shard, "shard", "deprecated: give the dead letter as an argument `SHARD`:DLQID")
	var id optInt64
	fs.Var(&id, "id", "deprecated: give the dead letter as an argument SHARD:`DLQID`")
	all := fs.Bool("all", false, "re-queue every dead letter")
	task := fs.String("task", "", "re-queue the dead letters of task `NAME`")
	errText := fs.String("error", "", "re-queue the dead letters whose error contains `TEXT`")
	jsonOut := fs.Bool("json", false, "print JSON")
	pos, err := r.parseID(fs, cmd, args)
	if err != nil {
		return err
	}
	if shard.set || id.set {
		if shard.set && id.set {
			fmt.Fprintf(r.stderr, "%s dlq requeue: --shard and --id are deprecated; write the dead letter as an argument: %s dlq requeue %d:%d\n",
				r.name, r.name, shard.v, id.v)
		}
		if pos != "" {
			return usagef("the dead letter is given twice (%s and --shard/--id): write it once, as SHARD:DLQID", pos)
		}
	}
	if pos != "" {
		a, b, ok := strings.Cut(pos, ":")
		sv, err1 := strconv.Atoi(a)
		iv, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return usagef("dead letter %q: want SHARD:DLQID, such as 2:17 (the SHARD and DLQ ID columns of dlq list)", pos)
		}
		shard, id = optInt{v: sv, set: true}, optInt64{v: iv, set: true}
	}
	filtered := *task != "" || *errText != ""
	switch {
	case (*all || filtered) && (shard.set || id.set):
		return usagef("--all, --task and --error cannot be combined with a dead letter SHARD:DLQID")
	case !*all && !filtered && !(shard.set && id.set):
		return usagef("dlq requeue needs a dead letter SHARD:DLQID, or --all, --task or --error")
	case !*all && !filtered && (shard.v < 0 || id.v < 1):
		return usagef("--shard and --id must not be negative")
	}
	name, err := r.filterTask(*task)
	if err != nil {
		return err
	}
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	if !*all && !filtered {
		if err := checkShard(shard, c); err != nil {
			return err
		}
		job, err := c.RequeueDead(ctx, shard.v, id.v)
		if err != nil {
			return err
		}
		if *jsonOut {
			return writeJSON(r.stdout, map[string]any{"requeued": 1, "job_ids": []queuemax.JobID{job}})
		}
		fmt.Fprintf(r.stdout, "requeued dead letter %d of shard %d as job %s\n", id.v, shard.v, job)
		return nil
	}
	if name != "" && len(r.handlers) == 0 {
		if full, lerr := r.storeResolver(ctx, c)(name); lerr == nil {
			name = full
		}
	}
	jobs, err := requeueMatching(ctx, c, name, *errText)
	if err != nil {
		return err
	}
	if *jsonOut {
		if jobs == nil {
			jobs = []queuemax.JobID{}
		}
		return writeJSON(r.stdout, map[string]any{"requeued": len(jobs), "job_ids": jobs})
	}
	fmt.Fprintf(r.stdout, "requeued %d dead %s\n", len(jobs), plural(len(jobs), "letter"))
	return nil
}

// requeueMatching re-queues every dead letter of task (any if "") whose
// error contains errText. Without errText every listed row matches, so
// pages of 1000 are taken until none is left; with it, each shard's rows
// are listed whole first, so rows that do not match never hide others.
func requeueMatching(ctx context.Context, c *queuemax.Client, task, errText string) ([]queuemax.JobID, error) {
	var jobs []queuemax.JobID
	requeue := func(dls []*queuemax.DeadLetter) error {
		for _, d := range dls {
			if !strings.Contains(d.Error, errText) {
				continue
			}
			job, err := c.RequeueDead(ctx, d.Shard, d.ID)
			if errors.Is(err, queuemax.ErrJobNotFound) {
				continue // an earlier row of the same job took it along
			}
			if err != nil {
				return fmt.Errorf("after requeueing %d: dead letter %d of shard %d: %w", len(jobs), d.ID, d.Shard, err)
			}
			jobs = append(jobs, job)
		}
		return nil
	}
	for errText == "" {
		dls, err := c.DeadLetters(ctx, queuemax.ListParams{Task: task, Limit: 1000})
		if err != nil {
			return jobs, fmt.Errorf("after requeueing %d: %w", len(jobs), err)
		}
		if len(dls) == 0 {
			return jobs, nil
		}
		before := len(jobs)
		if err := requeue(dls); err != nil {
			return jobs, err
		}
		if len(jobs) == before {
			return jobs, nil // nothing left that can be re-queued
		}
	}
	for sh := range c.Shards() {
		var dls []*queuemax.DeadLetter
		for limit := 1000; ; limit *= 4 {
			var err error
			dls, err = c.DeadLetters(ctx, queuemax.ListParams{Shard: queuemax.Ptr(sh), Task: task, Limit: limit})
			if err != nil {
				return jobs, fmt.Errorf("after requeueing %d: %w", len(jobs), err)
			}
			if len(dls) < limit {
				break
			}
		}
		if err := requeue(dls); err != nil {
			return jobs, err
		}
	}
	return jobs, nil
}

var recoverCommand = &command{
	name:    "recover",
	args:    "[--older-than DURATION] [--json]",
	summary: "take back orphaned jobs now",
	help: `
Recover takes back, now, running jobs whose heartbeat is older than the
stuck timeout (STUCK_TIMEOUT, default 30s, or --older-than): their worker
died. They return to pending, or go to the dead-letter queue if that was
their last attempt. A running worker does this by itself every
RECOVERY_INTERVAL.`,
	run: runRecover,
}

func runRecover(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	older := fs.Duration("older-than", 0, "take back jobs whose heartbeat is older than `DURATION` (default STUCK_TIMEOUT, or 30s)")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	if *older < 0 {
		return usagef("--older-than %s: want a positive duration", *older)
	}
	c, err := r.open(ctx, readWrite, "", func(cfg *queuemax.Config) {
		if *older > 0 {
			cfg.StuckTimeout = *older
			// This process renews no heartbeat; keep the config valid.
			cfg.HeartbeatInterval = min(max(cfg.HeartbeatInterval, 5*time.Second), *older/2)
		}
	})
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	res, err := c.RecoverOrphans(ctx)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"requeued": res.Requeued, "dead_lettered": res.DeadLettered})
	}
	n := res.Requeued + res.DeadLettered
	fmt.Fprintf(r.stdout, "recovered %d orphaned %s: %d back to pending, %d dead-lettered\n",
		n, plural(n, "job"), res.Requeued, res.DeadLettered)
	return nil
}

var purgeCommand = &command{
	name:    "purge",
	args:    "(--status S[,S...] | --days N) [--yes] [--json]",
	summary: "delete jobs by status, or finished jobs older than N days",
	help: `
Purge deletes jobs: every job with one of the --status values (repeat the
flag or separate them with commas: pending, scheduled, processing, failed,
completed, cancelled), or, with --days N, the failed, completed and
cancelled jobs and the dead letters that finished more than N days ago
(--days 0: all of them).
Purging processing jobs makes their workers' acknowledgements fail.
Purge --status keeps the dead-letter queue.

Purge asks for confirmation when standard input is a terminal, and refuses
to run without --yes when it is not.`,
	run: runPurge,
}

func runPurge(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	var statuses listFlag
	fs.Var(&statuses, "status", "delete jobs with status `S` (repeatable, or a comma list)")
	var days optInt
	fs.Var(&days, "days", "delete finished jobs and dead letters older than `N` days")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	var sts []queuemax.Status
	for _, s := range statuses {
		if s == "dead" {
			return usagef("--status dead: dead letters are deleted by age, with --days")
		}
		st, err := queuemax.ParseStatus(s)
		if err != nil {
			return usagef("--status %q: want pending, scheduled, processing, failed, completed or cancelled", s)
		}
		sts = append(sts, st)
	}
	switch {
	case len(sts) > 0 && days.set:
		return usagef("--status and --days cannot be combined")
	case len(sts) == 0 && !days.set:
		return usagef("purge needs --status or --days (see %s purge --help)", r.name)
	case days.set && days.v < 0:
		return usagef("--days %d: want 0 or more", days.v)
	}
	tty := isTerminal(r.stdin)
	if !*yes && !tty {
		return usagef("refusing to delete without --yes (standard input is not a terminal)")
	}
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	if !*yes {
		what, err := purgeSummary(ctx, c, sts, days.v)
		if err != nil {
			return err
		}
		fmt.Fprintf(r.stderr, "Delete %s from %s? [y/N] ", what, where(c))
		answer, _ := bufio.NewReader(r.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(r.stdout, "nothing deleted")
			return nil
		}
	}
	if days.set {
		age := time.Duration(days.v) * 24 * time.Hour
		if age == 0 {
			age = time.Nanosecond // Cleanup's zero means its default age
		}
		res, err := c.Cleanup(ctx, age)
		if err != nil {
			return err
		}
		if *jsonOut {
			return writeJSON(r.stdout, map[string]any{"jobs": res.Jobs, "dead_letters": res.DeadLetters})
		}
		fmt.Fprintf(r.stdout, "deleted %d finished %s and %d dead %s older than %d %s\n",
			res.Jobs, plural(res.Jobs, "job"), res.DeadLetters, plural(res.DeadLetters, "letter"), days.v, plural(days.v, "day"))
		return nil
	}
	n, err := c.Purge(ctx, sts...)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"jobs": n, "statuses": sts})
	}
	fmt.Fprintf(r.stdout, "deleted %d %s (%s)\n", n, plural(n, "job"), joinStatuses(sts))
	return nil
}

// purgeSummary describes what a purge would delete, for the prompt.
func purgeSummary(ctx context.Context, c *queuemax.Client, sts []queuemax.Status, days int) (string, error) {
	if len(sts) == 0 {
		return fmt.Sprintf("the failed and completed jobs and dead letters older than %d %s", days, plural(days, "day")), nil
	}
	s, err := c.Stats(ctx)
	if err != nil {
		return "", err
	}
	counts := map[queuemax.Status]int64{
		queuemax.StatusPending: s.Pending, queuemax.StatusScheduled: s.Scheduled,
		queuemax.StatusProcessing: s.Processing, queuemax.StatusFailed: s.Failed, queuemax.StatusCompleted: s.Completed,
	}
	var total int64
	var parts []string
	for _, st := range sts {
		n, known := counts[st]
		if !known {
			parts = append(parts, string(st))
			continue
		}
		total += n
		parts = append(parts, fmt.Sprintf("%d %s", n, st))
	}
	return fmt.Sprintf("%d %s (%s)", total, plural(int(total), "job"), strings.Join(parts, ", ")), nil
}

func joinStatuses(sts []queuemax.Status) string {
	s := make([]string, len(sts))
	for i, st := range sts {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
