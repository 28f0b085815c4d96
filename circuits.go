package queuemax

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/store"
)

// UnavailableError marks an error that says a dependency is failing; see
// Unavailable.
type UnavailableError = queuemaxtype.UnavailableError

// Unavailable wraps err to say that a dependency the handler calls is
// failing (down, overloaded, unreachable), so that it counts against the
// task's circuit breaker. It is retried like any error; the cause stays
// reachable through errors.Is/As. An error type of your own can say the
// same (or the opposite) with a DependencyFailure() bool method.
func Unavailable(err error) error { return queuemaxtype.Unavailable(err) }

// IsDependencyFailure reports whether a handler's err counts against its
// task's circuit breaker: whether it says the dependency is failing,
// rather than the job's own input. It decides by type, never by message
// text, in this order:
//
//   - Permanent, Cancel, Snooze and panics never count.
//   - An error with a DependencyFailure() bool method (Unavailable's, or
//     your own) counts when it returns true, and not when it returns false,
//     whatever it wraps.
//   - *RetryAfterError and *TimeoutError (the job ran past its timeout)
//     count.
//   - An error with a StatusCode() int or HTTPStatus() int method counts
//     for 5xx and 429, not for other statuses.
//   - context.DeadlineExceeded, timeouts (a Timeout() bool method returning
//     true), connection errors (refused, reset, aborted, broken pipe,
//     timed out, host or network unreachable, *net.OpError) count; a host
//     name that does not resolve (*net.DNSError that is not a timeout or
//     temporary) does not: it is the input's.
//   - Anything else (a plain fmt.Errorf, a payload or decode error) does
//     not count.
func IsDependencyFailure(err error) bool { return engine.DependencyFailure(err) }

// CircuitBreakerInfo is one task's circuit breaker as stored: the breaker
// every process running the task shares (see docs/breakers.md).
type CircuitBreakerInfo struct {
	// Task is the task name; "" is a catch-all handler's breaker.
	Task string `json:"task"`
	// State is "closed", "open" or "half_open".
	State string `json:"state"`
	// Failures counts the consecutive dependency failures (since the last
	// success any process recorded).
	Failures int `json:"failures"`
	// Threshold is this client's setting for the task (0 when it has no
	// handler of it, or its breaker is off).
	Threshold int `json:"threshold,omitempty"`
	// OpenedAt is when it last opened, OpenUntil when an open breaker lets
	// a probe through.
	OpenedAt  time.Time `json:"opened_at,omitzero"`
	OpenUntil time.Time `json:"open_until,omitzero"`
	// ProbeOwner is the worker running the half-open probe, until
	// ProbeExpires.
	ProbeOwner   string    `json:"probe_owner,omitempty"`
	ProbeExpires time.Time `json:"probe_expires,omitzero"`
	// LastError is the last counted failure's message.
	LastError string    `json:"last_error,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Held says why the breaker holds the task's ready jobs; "" when it
	// is closed.
	Held string `json:"held,omitempty"`
}

// CircuitBreakers returns the stored circuit breakers of every task,
// ordered by task, with a closed entry for each task this client has a
// handler of and no stored breaker. It reads the store (one small table),
// so it shows the breakers every process shares, whether or not this
// process runs workers.
func (c *Client) CircuitBreakers(ctx context.Context) ([]CircuitBreakerInfo, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := c.st.BreakerList(ctx)
	if err != nil {
		return nil, err
	}
	now := c.now()
	out := make([]CircuitBreakerInfo, 0, len(rows)+len(c.names))
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		seen[r.Task] = true
		out = append(out, c.circuitInfo(r, now))
	}
	for _, name := range c.names {
		if !seen[name] {
			out = append(out, c.circuitInfo(store.BreakerRow{Task: name, State: store.BreakerClosed}, now))
		}
	}
	slices.SortFunc(out, func(a, b CircuitBreakerInfo) int { return strings.Compare(a.Task, b.Task) })
	return out, nil
}

func (c *Client) circuitInfo(r store.BreakerRow, now time.Time) CircuitBreakerInfo {
	if r.State == "" {
		r.State = store.BreakerClosed
	}
	info := CircuitBreakerInfo{Task: r.Task, State: r.State, Failures: r.Failures, OpenedAt: r.OpenedAt,
		ProbeOwner: r.ProbeOwner, ProbeExpires: r.ProbeExpires, LastError: r.LastError, UpdatedAt: r.UpdatedAt,
		Held: breaker.Held(r, now)}
	if r.State == store.BreakerOpen {
		info.OpenUntil = r.Until
	}
	if h, ok := c.handlers[r.Task]; ok && !h.Options.CircuitOff && c.cfg.CircuitThreshold > 0 {
		info.Threshold = c.cfg.CircuitThreshold
	}
	return info
}

// fillCircuits sets the breaker figures of s from the stored breakers:
// Circuits, the worst CircuitState, the most consecutive failures of any
// task, and Breakers.
func (c *Client) fillCircuits(ctx context.Context, s *Stats) error {
	infos, err := c.CircuitBreakers(ctx)
	if err != nil {
		return fmt.Errorf("queuemax: circuit breakers: %w", err)
	}
	rank := map[string]int{store.BreakerClosed: 0, store.BreakerHalfOpen: 1, store.BreakerOpen: 2}
	s.Breakers = infos
	s.Circuits = make(map[string]string, len(infos))
	s.CircuitState, s.CircuitFailures = store.BreakerClosed, 0
	for _, b := range infos {
		s.Circuits[b.Task] = b.State
		if rank[b.State] > rank[s.CircuitState] {
			s.CircuitState = b.State
		}
		s.CircuitFailures = max(s.CircuitFailures, b.Failures)
	}
	return nil
}

// fillHeld sets Job.Held of each ready job whose task's stored breaker
// holds it (one read of the breakers for the whole listing).
func (c *Client) fillHeld(ctx context.Context, jobs []*Job) {
	now := c.now()
	ready := false
	for _, j := range jobs {
		if isReady(j, now) {
			ready = true
			break
		}
	}
	if !ready {
		return
	}
	rows, err := c.st.BreakerList(ctx)
	if err != nil || len(rows) == 0 {
		return
	}
	byTask := make(map[string]store.BreakerRow, len(rows))
	for _, r := range rows {
		byTask[r.Task] = r
	}
	for _, j := range jobs {
		if !isReady(j, now) {
			continue
		}
		r, ok := byTask[j.Task]
		if !ok {
			r, ok = byTask[""] // a catch-all handler's breaker
		}
		if ok {
			if held := breaker.Held(r, now); held != "" && (j.Held == "" || !strings.Contains(j.Held, held)) {
				if j.Held != "" {
					held = j.Held + "; " + held
				}
				j.Held = held
			}
		}
	}
}

// isReady reports whether j waits to be claimed now.
func isReady(j *Job, now time.Time) bool {
	switch j.Status {
	case StatusPending:
		return j.NextRetryAt.IsZero() || !j.NextRetryAt.After(now)
	case StatusScheduled:
		return !j.NextRetryAt.IsZero() && !j.NextRetryAt.After(now)
	}
	return false
}
