package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax"
)

var periodicCommand = &command{
	name:    "periodic",
	args:    "[--json]",
	summary: "list periodic tasks with their next and last runs",
	help: `
Periodic lists the periodic tasks registered in the data directory (a
worker registers its periodic tasks when it starts) with their schedule,
next run, last run and the state of the last run's job. A binary with a
task registry also lists its periodic tasks that no worker has registered
yet. The data directory is opened read-only.`,
	run: runPeriodic,
}

// periodicOut is one periodic task in periodic --json.
type periodicOut struct {
	Task        string         `json:"task"`
	Schedule    string         `json:"schedule"`
	Misfire     string         `json:"misfire,omitempty"`
	Registered  bool           `json:"registered"`
	NextRun     *time.Time     `json:"next_run,omitempty"`
	LastRun     *time.Time     `json:"last_run,omitempty"`
	LastJobID   queuemax.JobID `json:"last_job_id,omitempty"`
	LastOutcome string         `json:"last_outcome,omitempty"`
}

func runPeriodic(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	c, jsonOut, err := r.openListing(ctx, cmd, args)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	infos, err := c.PeriodicTasks(ctx)
	if err != nil {
		return err
	}
	out := make([]periodicOut, 0, len(infos))
	seen := map[string]bool{}
	for _, p := range infos {
		seen[p.Task] = true
		out = append(out, periodicOut{Task: p.Task, Schedule: p.Schedule, Misfire: p.Misfire, Registered: true,
			NextRun: timePtr(p.NextRun), LastRun: timePtr(p.LastRun), LastJobID: p.LastJobID, LastOutcome: p.LastOutcome})
	}
	for _, h := range r.handlers {
		if h.Periodic != nil && !seen[h.Name] {
			out = append(out, periodicOut{Task: h.Name, Schedule: describeSchedule(h.Periodic)})
		}
	}
	if jsonOut {
		return writeJSON(r.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(r.stdout, "no periodic tasks registered (a worker registers its periodic tasks when it starts)")
		return nil
	}
	now := time.Now()
	t := newTable(r.stdout, "TASK", "SCHEDULE", "NEXT RUN", "LAST RUN", "LAST JOB", "OUTCOME")
	for _, p := range out {
		if !p.Registered {
			t.row(shortTask(p.Task), p.Schedule, "not registered yet: no worker has run it", "-", "-", "-")
			continue
		}
		next, last := "-", "-"
		if p.NextRun != nil {
			next = fmt.Sprintf("%s (%s)", stamp(*p.NextRun), ago(*p.NextRun, now))
		}
		if p.LastRun != nil {
			last = fmt.Sprintf("%s (%s)", stamp(*p.LastRun), ago(*p.LastRun, now))
		}
		job, outcome := "-", "-"
		if p.LastJobID != 0 {
			job = p.LastJobID.String()
		}
		if p.LastOutcome != "" {
			outcome = p.LastOutcome
		}
		t.row(shortTask(p.Task), p.Schedule, next, last, job, outcome)
	}
	return t.flush()
}
