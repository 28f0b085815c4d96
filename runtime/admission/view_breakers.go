package admission

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
)

// BreakerInfo is one task's stored circuit breaker.
type BreakerInfo = queuemaxtype.CircuitBreakerInfo

// Breakers returns the stored circuit breakers of every task at now,
// ordered by task, with a closed entry for each of tasks without a
// stored breaker; thresholds are the client's settings, by task (a task
// without one shows 0).
func Breakers(ctx context.Context, st store.Store, now time.Time, tasks []string, thresholds map[string]int) ([]BreakerInfo, error) {
	rows, err := st.BreakerList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]BreakerInfo, 0, len(rows)+len(tasks))
	seen := make(map[string]bool, len(rows))
	info := func(r store.BreakerRow) BreakerInfo {
		if r.State == "" {
			r.State = store.BreakerClosed
		}
		b := BreakerInfo{Task: r.Task, State: r.State, Failures: r.Failures, OpenedAt: r.OpenedAt, ProbeOwner: r.ProbeOwner,
			ProbeExpires: r.ProbeExpires, LastError: r.LastError, UpdatedAt: r.UpdatedAt, Held: breaker.Held(r, now),
			Threshold: thresholds[r.Task]}
		if r.State == store.BreakerOpen {
			b.OpenUntil = r.Until
		}
		return b
	}
	for _, r := range rows {
		seen[r.Task] = true
		out = append(out, info(r))
	}
	for _, name := range tasks {
		if !seen[name] {
			out = append(out, info(store.BreakerRow{Task: name, State: store.BreakerClosed}))
		}
	}
	slices.SortFunc(out, func(a, b BreakerInfo) int { return strings.Compare(a.Task, b.Task) })
	return out, nil
}

// BreakerHeld sets Held on each ready job of jobs whose task's stored
// breaker holds it at now (one read of the breakers for the whole
// listing, none when no job is ready); a catch-all handler's breaker
// ("") covers the tasks without their own.
func BreakerHeld(ctx context.Context, st store.Store, now time.Time, jobs []*Job) {
	if !slices.ContainsFunc(jobs, func(j *Job) bool { return ready(j, now) }) {
		return
	}
	rows, err := st.BreakerList(ctx)
	if err != nil || len(rows) == 0 {
		return
	}
	byTask := make(map[string]store.BreakerRow, len(rows))
	for _, r := range rows {
		byTask[r.Task] = r
	}
	for _, j := range jobs {
		if !ready(j, now) {
			continue
		}
		r, ok := byTask[j.Task]
		if !ok {
			r, ok = byTask[""]
		}
		if !ok {
			continue
		}
		if held := breaker.Held(r, now); held != "" && (j.Held == "" || !strings.Contains(j.Held, held)) {
			if j.Held != "" {
				held = j.Held + "; " + held
			}
			j.Held = held
		}
	}
}

// ready reports whether j waits to be claimed at now.
func ready(j *Job, now time.Time) bool {
	switch j.Status {
	case queuemaxtype.StatusPending:
		return j.NextRetryAt.IsZero() || !j.NextRetryAt.After(now)
	case queuemaxtype.StatusScheduled:
		return !j.NextRetryAt.IsZero() && !j.NextRetryAt.After(now)
	}
	return false
}
