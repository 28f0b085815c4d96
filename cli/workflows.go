package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

var workflowsCommand = &command{
	name:    "workflows",
	args:    "[list] [--status S] [--name N] [--limit N] [--json] | show ID [--json] | cancel ID [--json] | retry ID [--json]",
	summary: "list workflows, show one with its steps, cancel or retry one",
	help: `
Workflows lists the stored workflows, newest first (workflows list, the
default: --status running|completed|failed|cancelled, --name, --limit,
default 100), shows one with every step's state, dependencies, job and the
reason a step was cancelled (workflows show ID), or cancels every step of
one that has not finished, running steps through their context (workflows
cancel ID), or retries a failed or cancelled one: its steps that did not
complete run again, completed ones keep their results (workflows retry ID).`,
	run: runWorkflows,
}

func runWorkflows(r *runner, ctx context.Context, cmd *command, args []string) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		return runWorkflowList(r, ctx, cmd, args)
	case "show", "cancel", "retry":
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return usagef("workflows %s needs a workflow ID (see %s workflows --help)", sub, r.name)
		}
		id, err := queuemax.ParseWorkflowID(args[0])
		if err != nil {
			return usagef("%v", strings.TrimPrefix(err.Error(), "queuemax: "))
		}
		switch sub {
		case "show":
			return runWorkflowShow(r, ctx, cmd, id, args[1:])
		case "retry":
			return runWorkflowRetry(r, ctx, cmd, id, args[1:])
		}
		return runWorkflowCancel(r, ctx, cmd, id, args[1:])
	}
	return usagef("unknown workflows command %q (want list, show, cancel or retry)", sub)
}

func runWorkflowList(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	status := fs.String("status", "", "only workflows with this `STATUS` (running, completed, failed, cancelled)")
	name := fs.String("name", "", "only workflows with this `NAME`")
	limit := fs.Int("limit", 100, "at most `N` workflows")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	switch queuemax.WorkflowStatus(*status) {
	case "", queuemax.WorkflowRunning, queuemax.WorkflowCompleted, queuemax.WorkflowFailed, queuemax.WorkflowCancelled:
	default:
		return usagef("--status: invalid workflow status %q (want running, completed, failed or cancelled)", *status)
	}
	if *limit < 1 {
		return usagef("--limit: want a positive number, got %d", *limit)
	}
	c, err := r.open(ctx, readOnly, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	ws, err := c.Workflows(ctx, queuemax.WorkflowListParams{Status: queuemax.WorkflowStatus(*status), Name: *name, Limit: *limit})
	if err != nil {
		return err
	}
	if *jsonOut {
		if ws == nil {
			ws = []*queuemax.WorkflowInfo{}
		}
		return writeJSON(r.stdout, ws)
	}
	if len(ws) == 0 {
		fmt.Fprintln(r.stdout, "no workflows")
		return nil
	}
	now := time.Now()
	t := newTable(r.stdout, "ID", "NAME", "STATUS", "CREATED", "FINISHED")
	for _, w := range ws {
		fin := "-"
		if !w.FinishedAt.IsZero() {
			fin = ago(w.FinishedAt, now)
		}
		t.row(w.ID.String(), w.Name, string(w.Status), ago(w.CreatedAt, now), fin)
	}
	return t.flush()
}

func runWorkflowShow(r *runner, ctx context.Context, cmd *command, id queuemax.WorkflowID, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	c, err := r.open(ctx, readOnly, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	w, err := c.Workflow(ctx, id)
	if errors.Is(err, queuemax.ErrWorkflowNotFound) {
		return fmt.Errorf("workflow %s does not exist", id)
	}
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, w)
	}
	return printWorkflow(r.stdout, w, time.Now())
}

// printWorkflow writes one workflow and its steps.
func printWorkflow(out io.Writer, w *queuemax.WorkflowInfo, now time.Time) error {
	fmt.Fprintf(out, "workflow %s %q: %s, created %s", w.ID, w.Name, w.Status, ago(w.CreatedAt, now))
	if !w.FinishedAt.IsZero() {
		fmt.Fprintf(out, ", finished %s", ago(w.FinishedAt, now))
	}
	fmt.Fprintln(out)
	t := newTable(out, "STEP", "TASK", "STATUS", "JOB", "AFTER", "REASON")
	for _, s := range w.Steps {
		var deps []string
		deps = append(deps, s.After...)
		for _, d := range s.AfterSettled {
			deps = append(deps, d+" (settled)")
		}
		for _, b := range s.Binds {
			deps = append(deps, b.From+" ("+b.Param+")")
		}
		dep := strings.Join(deps, ", ")
		if dep == "" {
			dep = "-"
		}
		job := "-"
		if s.JobID != 0 {
			job = strconv.FormatInt(int64(s.JobID), 10)
		}
		reason := s.Reason
		if reason == "" {
			reason = "-"
		}
		t.row(s.Name, s.Task, string(s.Status), job, dep, reason)
	}
	return t.flush()
}

func runWorkflowCancel(r *runner, ctx context.Context, cmd *command, id queuemax.WorkflowID, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	err = c.CancelWorkflow(ctx, id)
	if errors.Is(err, queuemax.ErrWorkflowNotFound) {
		return fmt.Errorf("workflow %s does not exist", id)
	}
	if err != nil {
		return err
	}
	w, err := c.Workflow(ctx, id)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"workflow_id": id, "status": w.Status})
	}
	if w.Status == queuemax.WorkflowRunning {
		fmt.Fprintf(r.stdout, "cancelled workflow %s; its running steps were asked to stop\n", id)
	} else {
		fmt.Fprintf(r.stdout, "workflow %s is %s\n", id, w.Status)
	}
	return nil
}

func runWorkflowRetry(r *runner, ctx context.Context, cmd *command, id queuemax.WorkflowID, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	n, err := c.RetryWorkflow(ctx, id)
	if errors.Is(err, queuemax.ErrWorkflowNotFound) {
		return fmt.Errorf("workflow %s does not exist", id)
	}
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"workflow_id": id, "steps": n, "status": queuemax.WorkflowRunning})
	}
	fmt.Fprintf(r.stdout, "retrying workflow %s: %d steps will run again\n", id, n)
	return nil
}
