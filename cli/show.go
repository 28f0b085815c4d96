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
	"github.com/queuemax/queuemax/internal/jsonview"
)

var showCommand = &command{
	name:    "show",
	args:    "ID [--json]",
	summary: "show one job, with its steps' progress",
	help: `
Show prints one job (a job ID or shard:seq): its task, status, attempts,
times, payload, result or last error, and the progress its job steps
recorded (queuemax.Step, Do and SetCursor): each step done with its
result, or the cursor it reached. The data directory is opened read-only.`,
	run: runShow,
}

func runShow(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	jsonOut := fs.Bool("json", false, "print JSON")
	// The ID may come before the flags (show 42 --json).
	var idArg string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, args = args[0], args[1:]
	}
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	if idArg == "" && fs.NArg() > 0 {
		idArg = fs.Arg(0)
	}
	if idArg == "" {
		return usagef("show needs a job ID")
	}
	id, err := queuemax.ParseJobID(idArg)
	if err != nil {
		return usagef("%v", strings.TrimPrefix(err.Error(), "queuemax: "))
	}
	c, err := r.open(ctx, readOnly, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	j, err := c.Job(ctx, id)
	if errors.Is(err, queuemax.ErrJobNotFound) {
		return fmt.Errorf("job %s does not exist", id)
	}
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(r.stdout, jsonview.NewJob(j))
	}
	return printJob(r.stdout, j, time.Now())
}

// printJob writes one job and its steps' progress.
func printJob(out io.Writer, j *queuemax.Job, now time.Time) error {
	t := newTable(out)
	t.row("Job", j.ID.String())
	t.row("Task", j.Task+queueTag(j.Queue))
	t.row("Status", string(j.Status))
	t.row("Tries", tries(j))
	t.row("Created", ago(j.CreatedAt, now))
	if d := detail(j, now); d != "-" {
		t.row("Detail", d)
	}
	t.row("Payload", clip(string(j.Payload), 200))
	if j.Result != nil {
		t.row("Result", clip(string(j.Result), 200))
	}
	if j.LastError != "" {
		t.row("Last error", clip(j.LastError, 200))
	}
	done := 0
	for _, s := range j.Steps {
		if s.Done {
			done++
		}
	}
	if len(j.Steps) > 0 {
		t.row("Steps", strconv.Itoa(done)+" done")
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(j.Steps) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	st := newTable(out, "STEP", "STATE", "VALUE", "UPDATED")
	for _, s := range j.Steps {
		state, value := "done", string(s.Result)
		if !s.Done {
			state, value = "running", "cursor "+string(s.Cursor)
			if s.Cursor == nil {
				value = "-"
			}
		}
		st.row(s.Name, state, clip(value, 80), ago(s.UpdatedAt, now))
	}
	return st.flush()
}

// stepsCol is list's STEPS column: how many steps are done and where an
// unfinished one is ("2 done; import at 1200"), or "-".
func stepsCol(j *queuemax.Job) string {
	if len(j.Steps) == 0 {
		return "-"
	}
	done := 0
	var at []string
	for _, s := range j.Steps {
		switch {
		case s.Done:
			done++
		case s.Cursor != nil:
			at = append(at, s.Name+" at "+string(s.Cursor))
		}
	}
	out := strconv.Itoa(done) + " done"
	if len(at) > 0 {
		out += "; " + strings.Join(at, ", ")
	}
	return clip(out, 40)
}
