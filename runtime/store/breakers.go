package store

import (
	"context"
	"time"
)

// Stored circuit breaker states (BreakerRow.State).
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// BreakerRow is one task's circuit breaker as stored: the one breaker of
// the task that every process on the store reads at claim time and
// updates with the outcomes of its jobs. Times are the writers' clocks.
type BreakerRow struct {
	// Task is the task name; "" is the breaker of a catch-all handler.
	Task string
	// State is BreakerClosed, BreakerOpen or BreakerHalfOpen; "" reads as
	// closed (no row yet).
	State string
	// Failures counts the consecutive dependency failures: counted
	// failures since the last success anyone recorded.
	Failures int
	// OpenedAt is when the breaker last opened; Until, while open, when a
	// probe may be taken.
	OpenedAt, Until time.Time
	// ProbeOwner is the worker holding the half-open probe ("" when none)
	// and ProbeExpires when its hold lapses (a process killed while it
	// probed frees the probe then).
	ProbeOwner   string
	ProbeExpires time.Time
	// LastError is the message of the last counted failure.
	LastError string
	UpdatedAt time.Time
}

// Closed reports whether the row lets every job through.
func (r BreakerRow) Closed() bool { return r.State == "" || r.State == BreakerClosed }

// BreakerStore keeps the circuit breakers of the tasks: the breaker part
// of Store.
type BreakerStore interface {
	// BreakerList returns every stored breaker, ordered by task.
	BreakerList(ctx context.Context) ([]BreakerRow, error)
	// BreakerUpdate reads the rows of tasks in one transaction (a task
	// without a row reads as a closed BreakerRow of that task), calls fn
	// for each and writes back every row for which fn returns true. It
	// returns the rows as they are after the transaction, in tasks' order.
	BreakerUpdate(ctx context.Context, tasks []string, fn func(*BreakerRow) bool) ([]BreakerRow, error)
	// ClaimProbe claims at most one ready job of p.Tasks for a half-open
	// breaker's probe, by preference: a job that never ran; else one whose
	// last attempt was a dependency failure (MarkDependencyFailures); else
	// any (highest priority, then oldest, within each).
	ClaimProbe(ctx context.Context, p ClaimParams) ([]*Job, error)
	// MarkDependencyFailures records that each job's attempt Attempt
	// failed on a dependency (not on its own input), for ClaimProbe's
	// preference. A later attempt's failure that is not marked supersedes
	// it. Unknown jobs are skipped.
	MarkDependencyFailures(ctx context.Context, marks []DependencyMark) error
}

// DependencyMark says that attempt Attempt of job ID was a dependency
// failure.
type DependencyMark struct {
	ID      JobID
	Attempt int
}
