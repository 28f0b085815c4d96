package cli

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

// queues limit NAME: a named queue's global limits (Client.SetQueueLimits).

const queuesLimitUsage = "queues limit NAME [--rate N/UNIT] [--concurrency N] [--clear] [--json]"

const queuesLimitHelp = `
Queues limit sets the global limits of queue NAME, over every worker of
every process that shares the queue, from their next claim: --rate N/UNIT
(at most N starts per UNIT: s, m, h or a duration such as 30s; a bucket
with a burst of N) and --concurrency N (at most N jobs of the queue running
at once). A flag left out keeps its value; 0 clears one limit and --clear
both. Without flags it prints the queue's limits. The limits are stored:
they last across restarts until cleared.`

func runQueuesLimit(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	fs := r.newFlagSet(cmd.name + " limit")
	rate := fs.String("rate", "", "at most `N/UNIT` starts (0 clears)")
	conc := fs.String("concurrency", "", "at most `N` jobs running at once (0 clears)")
	clearAll := fs.Bool("clear", false, "clear both limits")
	jsonOut := fs.Bool("json", false, "print JSON")
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	sub := &command{name: cmd.name + " limit", args: strings.TrimPrefix(queuesLimitUsage, "queues limit "), help: queuesLimitHelp}
	if err := r.parse(fs, sub, args); err != nil {
		return err
	}
	if name == "" {
		return usagef("queues limit: the queue NAME is required (%s)", queuesLimitUsage)
	}
	if err := queuemax.CheckQueueName(name); err != nil {
		return usagef("queues limit: %s", strings.TrimPrefix(err.Error(), "queuemax: "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var newRate *queuemax.Rate
	if set["rate"] {
		rt, err := parseQueueRate(*rate)
		if err != nil {
			return usagef("--rate %q: %v", *rate, err)
		}
		newRate = &rt
	}
	newConc := -1
	if set["concurrency"] {
		n, err := strconv.Atoi(*conc)
		if err != nil || n < 0 {
			return usagef("--concurrency %q: want a count ≥ 0 (0 clears it)", *conc)
		}
		newConc = n
	}
	if *clearAll && (newRate != nil || newConc >= 0) {
		return usagef("--clear clears both limits: give it without --rate and --concurrency")
	}
	change := *clearAll || newRate != nil || newConc >= 0
	c, err := r.open(ctx, readWrite, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	l, err := currentQueueLimits(ctx, c, name)
	if err != nil {
		return err
	}
	if change {
		switch {
		case *clearAll:
			l = queuemax.QueueLimits{}
		default:
			if newRate != nil {
				l.Rate = *newRate
			}
			if newConc >= 0 {
				l.Concurrency = newConc
			}
		}
		if err := c.SetQueueLimits(ctx, name, l); err != nil {
			return err
		}
	}
	if *jsonOut {
		return writeJSON(r.stdout, map[string]any{"queue": name, "limits": l})
	}
	switch {
	case !change:
		fmt.Fprintf(r.stdout, "queue %s limits: %s\n", name, l)
	case l.IsZero():
		fmt.Fprintf(r.stdout, "cleared the limits of queue %s\n", name)
	default:
		fmt.Fprintf(r.stdout, "queue %s limits: %s\n", name, l)
	}
	return nil
}

// currentQueueLimits returns queue's stored limits.
func currentQueueLimits(ctx context.Context, c *queuemax.Client, name string) (queuemax.QueueLimits, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return queuemax.QueueLimits{}, err
	}
	for _, q := range qs {
		if q.Name == name {
			return q.Limits, nil
		}
	}
	return queuemax.QueueLimits{}, nil
}

// parseQueueRate parses N/UNIT (UNIT s, m, h or a duration), or 0 (no
// rate).
func parseQueueRate(s string) (queuemax.Rate, error) {
	if s == "0" {
		return queuemax.Rate{}, nil
	}
	n, unit, ok := strings.Cut(s, "/")
	if !ok {
		return queuemax.Rate{}, fmt.Errorf("want N/s, N/m, N/h or N/DURATION (0 clears it)")
	}
	limit, err := strconv.Atoi(n)
	if err != nil || limit < 1 {
		return queuemax.Rate{}, fmt.Errorf("want a count ≥ 1 before /")
	}
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if per == 0 {
		d, err := time.ParseDuration(unit)
		if err != nil || d <= 0 {
			return queuemax.Rate{}, fmt.Errorf("want s, m, h or a positive duration after /")
		}
		per = d
	}
	return queuemax.Rate{Limit: limit, Per: per}, nil
}

// limitsColumn reports whether the queue table shows a LIMITS column: when
// some queue has limits.
func limitsColumn(qs []queuemax.QueueInfo) bool {
	for _, q := range qs {
		if !q.Limits.IsZero() {
			return true
		}
	}
	return false
}
