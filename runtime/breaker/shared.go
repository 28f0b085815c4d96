package breaker

import (
	"strconv"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// This file is the breaker that a store shares between processes: one
// store.BreakerRow per task, read at claim time by every process and
// updated in batches with the outcomes their jobs report. The functions
// are pure (the row is passed in, the clock too) so that every store
// applies the same rules inside its own transaction.

// Policy is how a process drives a shared breaker.
type Policy struct {
	// Threshold is how many consecutive dependency failures open a closed
	// breaker.
	Threshold int
	// Timeout is how long it stays open before a probe may be taken.
	Timeout time.Duration
	// ProbeTTL is how long a probe's hold lasts: a process killed while
	// it probes frees the probe after ProbeTTL, and another process may
	// probe.
	ProbeTTL time.Duration
}

// Outcomes is a batch of one task's outcomes reported by one process, in
// the order they were seen: any successes, then Failures counted failures
// after the last success.
type Outcomes struct {
	// Success is set when a success was seen (it zeroes the count, and
	// closes a half-open breaker).
	Success bool
	// Failures counts the dependency failures after the last success.
	Failures int
	// LastError is the message of the last counted failure.
	LastError string
	// Owner is the reporting worker, and ProbeDone set when its probe job
	// ended: the probe's hold is released (a probe whose job failed on its
	// own input, or never ran, counts for nothing and the next claim may
	// probe again).
	Owner     string
	ProbeDone bool
}

// Empty reports whether o carries nothing to write.
func (o Outcomes) Empty() bool { return !o.Success && o.Failures == 0 && !o.ProbeDone }

// Apply folds o into r at now and reports whether r changed. A closed
// breaker opens at Threshold consecutive failures, a half-open one at the
// first; a success zeroes the count and closes a half-open breaker;
// outcomes recorded while open (jobs that started before it opened) do not
// postpone its Until, and a success then changes nothing.
func Apply(r *store.BreakerRow, o Outcomes, p Policy, now time.Time) bool {
	changed := false
	if r.State == "" {
		r.State = store.BreakerClosed
	}
	if o.ProbeDone && o.Owner != "" && r.ProbeOwner == o.Owner {
		r.ProbeOwner, r.ProbeExpires = "", time.Time{}
		changed = true
	}
	// While open, a success (of a job that started before it opened)
	// changes nothing: the count says why it opened.
	if o.Success && r.State != store.BreakerOpen {
		if r.Failures != 0 {
			r.Failures = 0
			changed = true
		}
		if r.State == store.BreakerHalfOpen {
			r.State = store.BreakerClosed
			r.ProbeOwner, r.ProbeExpires = "", time.Time{}
			changed = true
		}
	}
	if o.Failures > 0 {
		r.Failures += o.Failures
		r.LastError = o.LastError
		changed = true
		switch r.State {
		case store.BreakerClosed:
			if r.Failures >= max(p.Threshold, 1) {
				open(r, p, now)
			}
		case store.BreakerHalfOpen:
			open(r, p, now)
		}
	}
	if changed {
		r.UpdatedAt = now
	}
	return changed
}

func open(r *store.BreakerRow, p Policy, now time.Time) {
	r.State = store.BreakerOpen
	r.OpenedAt, r.Until = now, now.Add(p.Timeout)
	r.ProbeOwner, r.ProbeExpires = "", time.Time{}
}

// Gate is what a claim may do with a task, read from its row at now.
type Gate int

const (
	// GateAllow: the breaker is closed, claim freely.
	GateAllow Gate = iota
	// GateProbe: a probe may be taken (TakeProbe decides who gets it).
	GateProbe
	// GateHold: the breaker holds the task's jobs (open, or another
	// process's probe is running).
	GateHold
)

// Check returns what a claim may do with r's task at now and, for
// GateHold, how long until that may change.
func Check(r store.BreakerRow, now time.Time) (Gate, time.Duration) {
	switch r.State {
	case store.BreakerOpen:
		if now.Before(r.Until) {
			return GateHold, r.Until.Sub(now)
		}
		return GateProbe, 0
	case store.BreakerHalfOpen:
		if r.ProbeOwner == "" || !now.Before(r.ProbeExpires) {
			return GateProbe, 0
		}
		return GateHold, r.ProbeExpires.Sub(now)
	}
	return GateAllow, 0
}

// TakeProbe gives the probe to owner if one may be taken at now: the row
// becomes half-open, held by owner until now+ProbeTTL. It reports whether
// owner got it.
func TakeProbe(r *store.BreakerRow, owner string, p Policy, now time.Time) bool {
	if g, _ := Check(*r, now); g != GateProbe {
		return false
	}
	r.State = store.BreakerHalfOpen
	r.ProbeOwner, r.ProbeExpires = owner, now.Add(p.ProbeTTL)
	r.UpdatedAt = now
	return true
}

// Held describes why r holds its task's jobs at now, or "" when it does
// not (closed), for example "circuit breaker of task shop.Charge is open
// until 12:03:04Z after 5 dependency failures".
func Held(r store.BreakerRow, now time.Time) string {
	name := "task " + r.Task
	if r.Task == "" {
		name = "the catch-all handler"
	}
	switch r.State {
	case store.BreakerOpen:
		if now.Before(r.Until) {
			return "circuit breaker of " + name + " is open until " + r.Until.UTC().Format("15:04:05Z") +
				" after " + plural(r.Failures, "dependency failure") + lastErr(r)
		}
		return "circuit breaker of " + name + " is open (due for a probe) after " + plural(r.Failures, "dependency failure") + lastErr(r)
	case store.BreakerHalfOpen:
		return "circuit breaker of " + name + " is half-open: one probe job runs before the others after " +
			plural(r.Failures, "dependency failure") + lastErr(r)
	}
	return ""
}

func lastErr(r store.BreakerRow) string {
	if r.LastError == "" {
		return ""
	}
	msg := r.LastError
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return " (last: " + msg + ")"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// StateOf returns the State named by a stored row.
func StateOf(r store.BreakerRow) State {
	switch r.State {
	case store.BreakerOpen:
		return Open
	case store.BreakerHalfOpen:
		return HalfOpen
	}
	return Closed
}
