package queuemax

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"time"
)

// Backoff returns the delay before the retry that follows failed attempt n
// (n ≥ 1): base·2^(n−1), with ±20% jitter, capped at one hour. The jitter
// is applied before the cap, so capped delays are exactly one hour.
func Backoff(base time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(base) * float64(uint64(1)<<min(n-1, 40))
	d *= 1 + (rand.Float64()*0.4 - 0.2)
	if d >= float64(maxBackoff) {
		return maxBackoff
	}
	return time.Duration(d)
}

// Decision is how a failed attempt is handled.
type Decision struct {
	// Permanent means no further attempt: the job goes to the dead-letter
	// queue.
	Permanent bool
	// Delay, when positive, overrides the exponential backoff.
	Delay time.Duration
	// Reason names the rule that decided, for logs.
	Reason string
}

// Classify decides whether err is worth retrying, by type and never by the
// text of its message:
//
//   - Permanent(err) and Cancel(err) are permanent (Cancel ends the job
//     cancelled instead of dead); RetryAfter(d, err) retries after d.
//   - An error with a StatusCode() int method (an HTTP status) is permanent
//     for 4xx except 408 and 429, and retryable for 408, 429 and 5xx; if it
//     also has a RetryAfter() time.Duration method, that delay is honoured.
//   - Deadlines, timeouts (a Timeout() bool method returning true) and
//     connection errors (refused, reset, aborted, broken pipe, net.OpError)
//     are retryable.
//   - Anything else is retryable: a job fails for good only when it has
//     used all its attempts or an error says so.
func Classify(err error) Decision {
	if s, ok := errors.AsType[*SnoozeError](err); ok {
		return Decision{Delay: s.Delay, Reason: "snooze"}
	}
	if _, ok := errors.AsType[*CancelError](err); ok {
		return Decision{Permanent: true, Reason: "cancelled"}
	}
	if _, ok := errors.AsType[*PermanentError](err); ok {
		return Decision{Permanent: true, Reason: "permanent"}
	}
	if ra, ok := errors.AsType[*RetryAfterError](err); ok {
		return Decision{Delay: ra.Delay, Reason: "retry-after"}
	}
	var sc interface{ StatusCode() int }
	if errors.As(err, &sc) {
		code := sc.StatusCode()
		var delay time.Duration
		var ra interface{ RetryAfter() time.Duration }
		if errors.As(err, &ra) {
			delay = ra.RetryAfter()
		}
		switch {
		case code == 408 || code == 429:
			return Decision{Delay: delay, Reason: "http status retryable"}
		case code >= 400 && code < 500:
			return Decision{Permanent: true, Reason: "http client error"}
		case code >= 500:
			return Decision{Delay: delay, Reason: "http server error"}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Decision{Reason: "deadline"}
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return Decision{Reason: "timeout"}
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return Decision{Reason: "connection"}
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return Decision{Reason: "connection"}
	}
	return Decision{Reason: "default"}
}
