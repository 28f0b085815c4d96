package queuemax

import (
	"time"

	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/ratelimit"
)

// RateLimiter is a token bucket: Limit tokens per Per with a burst, shared by
// every goroutine that holds it. Acquire(ctx) waits (sleeping, never
// spinning) until a token is due; TryAcquire, Remaining, RetryAfter, Update,
// Reset and Stats complete queue-max's RateLimiter API. A nil *RateLimiter
// means no limit. Run uses one for Config.RateLimit and one per task with a
// TaskOptions.RateLimit; this type is for limits of your own. See
// ratelimit.Limiter (go doc github.com/queuemax/queuemax/runtime/ratelimit.Limiter)
// for its methods.
type RateLimiter = ratelimit.Limiter

// RateLimiterStats is a snapshot of a RateLimiter; see ratelimit.Stats
// (go doc github.com/queuemax/queuemax/runtime/ratelimit.Stats) for its fields.
type RateLimiterStats = ratelimit.Stats

// NewRateLimiter returns a full bucket of burst tokens (burst 0 means
// limit) refilled at limit tokens per per.
func NewRateLimiter(limit int, per time.Duration, burst int) (*RateLimiter, error) {
	return ratelimit.New(limit, per, burst)
}

// CircuitBreaker opens after Threshold consecutive failures, rejects calls
// for Timeout, then lets one probe through: its success closes the breaker,
// its failure opens it again. Allow returns a ticket that the caller settles
// with Success, Failure or Release, so a probe that finds nothing to do
// cannot wedge it half-open. Run uses one built from Config.CircuitThreshold
// and Config.CircuitTimeout; this type is for breakers of your own. See
// breaker.Breaker (go doc github.com/queuemax/queuemax/runtime/breaker.Breaker)
// for its methods.
type CircuitBreaker = breaker.Breaker

// CircuitBreakerConfig configures NewCircuitBreaker; see breaker.Config
// (go doc github.com/queuemax/queuemax/runtime/breaker.Config) for its fields.
type CircuitBreakerConfig = breaker.Config

// CircuitState is a breaker's state: closed, open or half_open; see
// breaker.State (go doc github.com/queuemax/queuemax/runtime/breaker.State).
type CircuitState = breaker.State

// CircuitOpenError is returned by CircuitBreaker.Call while the breaker
// rejects calls; it matches ErrCircuitOpen. See breaker.OpenError
// (go doc github.com/queuemax/queuemax/runtime/breaker.OpenError) for its
// fields.
type CircuitOpenError = breaker.OpenError

// ErrCircuitOpen is matched by every CircuitOpenError.
var ErrCircuitOpen = breaker.ErrOpen

// Circuit states.
const (
	CircuitClosed   = breaker.Closed
	CircuitOpen     = breaker.Open
	CircuitHalfOpen = breaker.HalfOpen
)

// NewCircuitBreaker returns a closed breaker.
func NewCircuitBreaker(cfg CircuitBreakerConfig) (*CircuitBreaker, error) { return breaker.New(cfg) }
