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
	"github.com/queuemax/queuemax/internal/jsonview"
)

var statsCommand = &command{
	name:    "stats",
	args:    "[--shard N] [--json]",
	summary: "show job counts per shard and in total",
	help: `
Stats prints the queue's statistics: the queue-wide figures, then a table
with one row per shard and a total row. Pending jobs are ready now;
scheduled ones wait for a run-at or retry time; failed ones are dead-lettered
and still in the queue table; completed ones are kept for their result.
Processed and failed totals count every completion and dead-lettering ever
recorded. The data directory is opened read-only.

The circuit breakers are the stored ones every process shares (state, until
when, consecutive dependency failures, last counted error); the rate limits
and tokens are those of the live workers (from the worker registry; see
workers), and the uptime is the queue's:
since the earliest live worker started, or since the queue was created.
Every task with waiting jobs is listed with how many live workers run it;
a task with pending jobs and no live worker is reported as a warning. A
shard that cannot be read is shown unhealthy with its error, and the
command then exits 1.`,
	run: runStats,
}

// statsOut is stats --json: every Stats field, with snake_case shards.
type statsOut struct {
	DataDir string `json:"data_dir"`
	queuemax.Stats
	PerShard []jsonview.Shard `json:"shards"` // shadows Stats.PerShard
}

func runStats(r *runner, ctx context.Context, cmd *command, args []string) (err error) {
	var statsErr error // a shard that could not be read: printed, then returned
	fs := r.newFlagSet(cmd.name)
	jsonOut := fs.Bool("json", false, "print JSON")
	var shardFlag optInt
	fs.Var(&shardFlag, "shard", "show only shard `N`")
	if err := r.parse(fs, cmd, args); err != nil {
		return err
	}
	shard := &shardFlag.v
	if !shardFlag.set {
		*shard = -1
	}
	c, err := r.open(ctx, readOnly, "", nil)
	if err != nil {
		return err
	}
	defer closeClient(c, &err)
	if err := checkShard(shardFlag, c); err != nil {
		return err
	}
	s, err := c.Stats(ctx)
	if err != nil && s.PerShard == nil {
		return err
	}
	defer func() {
		if err == nil && statsErr != nil {
			err = statsErr
		}
	}()
	statsErr = err
	out := statsOut{DataDir: c.Dir(), Stats: s}
	for _, sh := range s.PerShard {
		out.PerShard = append(out.PerShard, jsonview.NewShard(sh))
	}
	if *jsonOut {
		if *shard >= 0 {
			return writeJSON(r.stdout, out.PerShard[*shard])
		}
		return writeJSON(r.stdout, out)
	}
	now := time.Now()
	if *shard < 0 {
		kv := newTable(r.stdout)
		if c.Dir() != "" {
			kv.row("Data dir", c.Dir())
		} else {
			kv.row("Store", where(c))
		}
		kv.row("Shards", strconv.Itoa(s.NumShards))
		kv.row("Healthy", yesNo(s.IsHealthy))
		if len(s.Degraded) > 0 {
			// A task's dependency is down: its jobs wait, the queue works.
			var ds []string
			for _, task := range s.Degraded {
				ds = append(ds, fmt.Sprintf("%s (breaker %s)", shortTask(task), strings.ReplaceAll(s.Circuits[task], "_", "-")))
			}
			kv.row("Degraded", strings.Join(ds, ", "))
		}
		kv.row("Max retries", strconv.Itoa(s.MaxRetries))
		if s.RateLimit > 0 {
			kv.row("Rate limit", fmt.Sprintf("%d per %s", s.RateLimit, s.RateLimitPer))
			kv.row("Tokens available", fmt.Sprintf("%.1f", s.TokensAvailable))
		} else {
			kv.row("Rate limit", "none")
			kv.row("Tokens available", "unlimited")
		}
		kv.row("Circuit", fmt.Sprintf("%s (at most %d consecutive dependency failures)", s.CircuitState, s.CircuitFailures))
		for _, b := range s.Breakers {
			kv.row("  "+shortTask(b.Task), circuitLine(b, now))
		}
		for _, task := range slices.Sorted(maps.Keys(s.RateLimits)) {
			rl := s.RateLimits[task]
			name := task
			if task != "*" {
				name = shortTask(task)
			}
			kv.row("  rate "+name, fmt.Sprintf("%d per %s, %.1f tokens, %d waited", rl.Limit, rl.Per, rl.Tokens, rl.Denied))
		}
		globalLimitRows(kv, s.GlobalLimits)
		kv.row("Uptime", roughDuration(time.Duration(s.UptimeSeconds*float64(time.Second))))
		kv.row("Live workers", strconv.Itoa(len(s.Workers)))
		if err := kv.flush(); err != nil {
			return err
		}
		fmt.Fprintln(r.stdout)
		if len(s.Tasks) > 0 {
			tt := newTable(r.stdout, "TASK", "PENDING", "SCHEDULED", "LIVE WORKERS")
			for _, task := range slices.Sorted(maps.Keys(s.Tasks)) {
				ti := s.Tasks[task]
				tt.row(shortTask(task), strconv.FormatInt(ti.Pending, 10), strconv.FormatInt(ti.Scheduled, 10), strconv.Itoa(ti.Workers))
			}
			if err := tt.flush(); err != nil {
				return err
			}
			fmt.Fprintln(r.stdout)
		}
		if showQueues(s.Queues) {
			if err := printQueues(r.stdout, s.Queues, now); err != nil {
				return err
			}
			fmt.Fprintln(r.stdout)
		}
		for _, w := range s.Warnings {
			fmt.Fprintln(r.stdout, "warning: "+w)
		}
		if len(s.Warnings) > 0 {
			fmt.Fprintln(r.stdout)
		}
	}
	t := newTable(r.stdout, "SHARD", "PENDING", "SCHEDULED", "PROCESSING", "FAILED", "COMPLETED",
		"DLQ", "PROCESSED", "FAILED TOTAL", "OLDEST PENDING", "AVG RUN", "HEALTHY")
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, sh := range s.PerShard {
		if *shard >= 0 && sh.Shard != *shard {
			continue
		}
		health := yesNo(sh.Healthy)
		if sh.LastError != "" {
			health += ": " + clip(sh.LastError, 60)
		}
		avg := "-"
		if sh.AvgProcessingTime > 0 {
			avg = roughDuration(sh.AvgProcessingTime)
		}
		t.row(strconv.Itoa(sh.Shard), n(sh.Pending), n(sh.Scheduled), n(sh.Processing), n(sh.Failed),
			n(sh.Completed), n(sh.DeadLetters), n(sh.TotalProcessed), n(sh.TotalFailed),
			ago(sh.OldestPending, now), avg, health)
	}
	if *shard < 0 {
		t.row("total", n(s.Pending), n(s.Scheduled), n(s.Processing), n(s.Failed), n(s.Completed),
			n(s.DeadLetters), n(s.TotalProcessed), n(s.TotalFailed), "", "", yesNo(s.IsHealthy))
	}
	return t.flush()
}

// circuitLine describes one stored circuit breaker for stats.
func circuitLine(b queuemax.CircuitBreakerInfo, now time.Time) string {
	s := b.State
	switch {
	case b.State == "open" && now.Before(b.OpenUntil):
		s += " until " + b.OpenUntil.UTC().Format("15:04:05Z") + " (" + roughDuration(b.OpenUntil.Sub(now)) + ")"
	case b.State == "open":
		s += ", due for a probe"
	case b.State == "half_open" && b.ProbeOwner != "":
		s += ", probe running on " + b.ProbeOwner
	}
	s += fmt.Sprintf(", %d consecutive dependency failures", b.Failures)
	if b.Threshold > 0 {
		s += fmt.Sprintf(" (opens at %d)", b.Threshold)
	}
	if b.LastError != "" && b.State != "closed" {
		s += ", last: " + clip(b.LastError, 60)
	}
	return s
}
