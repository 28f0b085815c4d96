package queuemax

import (
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
)

// Backoff returns the delay before the retry that follows failed attempt n
// (n ≥ 1): base·2^(n−1), with ±20% jitter, capped at one hour. The jitter
// is applied before the cap, so capped delays are exactly one hour.
func Backoff(base time.Duration, n int) time.Duration { return engine.Backoff(base, n) }

// Decision is how a failed attempt is handled; see queuemaxtype.Decision
// for its fields.
type Decision = queuemaxtype.Decision

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
func Classify(err error) Decision { return engine.Classify(err) }
