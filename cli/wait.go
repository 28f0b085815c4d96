package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuemax/queuemax"
)

var waitCommand = &command{
	name:    "wait",
	args:    "[--timeout DURATION] [--interval DURATION]",
	summary: "wait until no job is pending, scheduled or running",
	help: `
Wait blocks until no job is pending, scheduled or running, showing
progress on standard error: a bar updated in place on a terminal, a line
every --interval otherwise. Jobs scheduled far ahead keep it waiting; use
--timeout to give up, which exits with status 1. The data directory is
opened read-only.`,
	run: runWait,
}

// pollInterval is how often wait reads the counts.
const pollInterval = 100 * time.Millisecond

func runWait(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name)
	timeout := fs.Duration("timeout", 0, "give up after `DURATION` (default: wait forever)")
	interval := fs.Duration("interval", 5*time.Second, "print progress every `DURATION` when standard error is not a terminal")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	if *timeout < 0 || *interval <= 0 {
		return usagef("--timeout and --interval must be positive")
	}
	c, err := r.open(ctx, readOnly, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, *timeout, errTimeout)
		defer cancel()
	}
	start := time.Now()
	p := newProgress(r.stderr, *interval)
	defer p.done()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var first int64 = -1
	for {
		s, err := c.Stats(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		left := s.Pending + s.Scheduled + s.Processing
		if first < 0 {
			first = left
		}
		first = max(first, left) // jobs enqueued meanwhile
		note := fmt.Sprintf("%d/%d done; %d pending, %d scheduled, %d running", first-left, first, s.Pending, s.Scheduled, s.Processing)
		if left == 0 {
			if p.tty {
				p.update(first, first, note, false)
			}
			p.done()
			fmt.Fprintf(r.stdout, "queue empty after %s\n", time.Since(start).Round(10*time.Millisecond))
			return nil
		}
		p.update(first-left, first, note, false)
		select {
		case <-ctx.Done():
			p.done()
			if errors.Is(context.Cause(ctx), errTimeout) {
				return fmt.Errorf("timed out after %s: %s", *timeout, leftNote(s))
			}
			return fmt.Errorf("interrupted: %s", leftNote(s))
		case <-tick.C:
		}
	}
}

var errTimeout = errors.New("wait timed out")

func leftNote(s queuemax.Stats) string {
	left := s.Pending + s.Scheduled + s.Processing
	return fmt.Sprintf("%d %s left (%d pending, %d scheduled, %d running)", left, plural(int(left), "job"), s.Pending, s.Scheduled, s.Processing)
}
