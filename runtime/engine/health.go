package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
)

// The health and waiting logic of the root package's Client.Health,
// Stats, WaitIdle and WaitUntilEmpty, which forward here. unavailable is
// the root's ErrShardUnavailable, which the errors wrap.

// Health is the verdict of queuemax.Client.Health on a Stats snapshot
// taken at checked: statsErr is Stats' error, perShard, tasks, workers and
// breakers its PerShard, Tasks, the number of its Workers and its
// Breakers. Problems (HealthProblems) make it unhealthy; an open or
// half-open breaker makes it degraded, never unhealthy.
func Health(checked time.Time, statsErr error, perShard []queuemaxtype.ShardStats, tasks map[string]queuemaxtype.TaskInfo,
	workers int, breakers []queuemaxtype.CircuitBreakerInfo, unavailable error) queuemaxtype.Health {
	h := queuemaxtype.Health{CheckedAt: checked, Workers: workers}
	h.Problems = HealthProblems(statsErr, perShard, tasks, unavailable)
	for _, b := range breakers {
		if b.State == store.BreakerOpen || b.State == store.BreakerHalfOpen {
			h.Degraded = append(h.Degraded, queuemaxtype.DegradedTask{Task: b.Task, Breaker: b.State, OpenUntil: b.OpenUntil, LastError: b.LastError})
		}
	}
	switch {
	case len(h.Problems) > 0:
		h.Status = queuemaxtype.HealthUnhealthy
	case len(h.Degraded) > 0:
		h.Status = queuemaxtype.HealthDegraded
	default:
		h.Status = queuemaxtype.HealthOK
	}
	return h
}

// HealthProblems returns the reasons the queue does not work, one
// sentence each, from a Stats snapshot: err is Stats' error, perShard and
// tasks its PerShard and Tasks.
func HealthProblems(err error, perShard []queuemaxtype.ShardStats, tasks map[string]queuemaxtype.TaskInfo, unavailable error) []string {
	var problems []string
	switch {
	case err != nil && perShard == nil:
		problems = append(problems, fmt.Sprintf("store unreachable: %v", err))
	case err != nil:
		for _, sh := range perShard {
			if !sh.Healthy {
				problems = append(problems, fmt.Sprintf("shard %d unreadable: %s", sh.Shard, sh.LastError))
			}
		}
		if len(problems) == 0 && !errors.Is(err, unavailable) {
			problems = append(problems, err.Error())
		}
	}
	for _, task := range slices.Sorted(maps.Keys(tasks)) {
		if ti := tasks[task]; ti.Pending > 0 && ti.Workers == 0 {
			name := task
			if name == "" {
				name = `"" (no task name)`
			}
			problems = append(problems, fmt.Sprintf("task %s has %d pending jobs and no live worker runs it", name, ti.Pending))
		}
	}
	return problems
}

// DegradedTasks returns the tasks of circuits whose breaker is open or
// half-open, sorted.
func DegradedTasks(circuits map[string]string) []string {
	var out []string
	for task, st := range circuits {
		if st == store.BreakerOpen || st == store.BreakerHalfOpen {
			out = append(out, task)
		}
	}
	slices.Sort(out)
	return out
}

// CircuitSummary returns the running engine's breakers for Stats: each
// task's state, the worst state and the most consecutive failures of any.
func (e *Engine) CircuitSummary() (circuits map[string]string, worst string, failures int) {
	rank := map[breaker.State]int{breaker.Closed: 0, breaker.HalfOpen: 1, breaker.Open: 2}
	w := breaker.Closed
	bs, _ := e.BreakerStats()
	circuits = make(map[string]string, len(bs))
	for name, st := range bs {
		circuits[name] = st.State.String()
		if rank[st.State] > rank[w] {
			w = st.State
		}
		failures = max(failures, st.Failures)
	}
	return circuits, w.String(), failures
}

// WaitUntilEmpty blocks until st has no pending, scheduled or running
// job, checking every 50ms, or until ctx ends.
func WaitUntilEmpty(ctx context.Context, st store.Store) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		has, err := st.HasWork(ctx)
		if err != nil {
			return err
		}
		if !has {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// WaitIdle blocks until active reports no running job and st has no
// ready job, checking every 20ms, or until ctx ends.
func WaitIdle(ctx context.Context, st store.Store, active func() int, unavailable error) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if active() == 0 {
			ready := 0
			ss, err := st.Stats(ctx)
			if err != nil {
				return err
			}
			for _, s := range ss {
				if !s.Healthy {
					return fmt.Errorf("%w: shard %d: %s", unavailable, s.Shard, s.LastError)
				}
				ready += int(s.Pending)
			}
			if ready == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}
