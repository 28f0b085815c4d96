package queuemax

import (
	"context"
	"fmt"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/admission"
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
func IsDependencyFailure(err error) bool { return admission.DependencyFailure(err) }

// CircuitBreakers returns the stored circuit breakers of every task,
// ordered by task, with a closed entry for each task this client has a
// handler of and no stored breaker. It reads the store (one small table),
// so it shows the breakers every process shares, whether or not this
// process runs workers.
func (c *Client) CircuitBreakers(ctx context.Context) ([]CircuitBreakerInfo, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	thresholds := make(map[string]int, len(c.handlers))
	for name, h := range c.handlers {
		if !h.Options.CircuitOff && c.cfg.CircuitThreshold > 0 {
			thresholds[name] = c.cfg.CircuitThreshold
		}
	}
	return admission.Breakers(ctx, c.st, c.now(), c.names, thresholds)
}

// fillCircuits sets the breaker figures of s from the stored breakers:
// Circuits, the worst CircuitState, the most consecutive failures of any
// task, and Breakers.
func (c *Client) fillCircuits(ctx context.Context, s *Stats) error {
	infos, err := c.CircuitBreakers(ctx)
	if err != nil {
		return fmt.Errorf("queuemax: circuit breakers: %w", err)
	}
	s.Breakers = infos
	s.Circuits, s.CircuitState, s.CircuitFailures = admission.BreakerSummary(infos)
	return nil
}

// fillHeld sets Job.Held of each ready job whose task's stored breaker
// holds it (runtime/admission.BreakerHeld).
func (c *Client) fillHeld(ctx context.Context, jobs []*Job) {
	admission.BreakerHeld(ctx, c.st, c.now(), jobs)
}
