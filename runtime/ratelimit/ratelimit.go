// Package ratelimit is a token-bucket rate limiter for the worker loop: one
// Limiter is shared by every worker of a queue and gates job executions.
//
// A bucket holds up to Burst tokens and refills continuously at Limit tokens
// per Per. It starts full. Acquire blocks until a token is available; a
// blocked caller sleeps on a timer until the moment its token is due (it is
// not woken only by its deadline, as in queue-max), and callers are served in
// arrival order. Time is read from the monotonic clock, so wall-clock steps do
// not release or stall tokens.
//
// The worker takes a token before it claims a job and refunds it when the
// claim finds nothing:
//
//	if err := lim.Acquire(ctx); err != nil {
//		return err
//	}
//	jobs, err := claim(ctx)
//	if len(jobs) == 0 {
//		lim.Refund()
//	}
//
// A nil *Limiter means "no limit": Acquire and TryAcquire succeed at once, so
// callers need no branches.
//
// Not API: import github.com/queuemax/queuemax instead. Its documentation is
// the reference for the root package's RateLimiter and RateLimiterStats,
// which alias Limiter and Stats:
// go doc github.com/queuemax/queuemax/runtime/ratelimit.Limiter.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// epsilon absorbs floating-point error in the token count, so that a waiter
// woken exactly when its token is due is not sent back to sleep for a
// nanosecond.
const epsilon = 1e-9

// Limiter is a token bucket. Create one with [New], [PerSecond], [PerMinute]
// or [PerHour]. It is safe for concurrent use. The zero value is not usable;
// a nil *Limiter imposes no limit.
type Limiter struct {
	mu        sync.Mutex
	limit     int
	per       time.Duration
	burst     int
	autoBurst bool      // burst was defaulted from limit and follows Update
	tokens    float64   // may be fractional; never above burst
	last      time.Time // last refill, with a monotonic reading
	waiters   []*waiter // FIFO; waiters[0] is the only one with a timer
	granted   uint64
	denied    uint64
	waited    time.Duration
}

// waiter is one blocked Acquire call.
type waiter struct {
	// kick tells the waiter to look at the bucket again: it became the head
	// of the queue, or Update or Reset changed the bucket. Capacity 1, so a
	// kick is never lost and a kicker never blocks.
	kick chan struct{}
}

// Stats is a snapshot of a Limiter's configuration and counters.
type Stats struct {
	// Tokens is the number of tokens in the bucket, possibly fractional.
	Tokens float64
	// Limit is how many tokens are added per Per.
	Limit int
	// Per is the refill period.
	Per time.Duration
	// Burst is the bucket's capacity.
	Burst int
	// Granted counts tokens handed out by Acquire and TryAcquire.
	Granted uint64
	// Denied counts TryAcquire calls that found no token and Acquire calls
	// that ended with their context's error.
	Denied uint64
	// TotalWait is the time Acquire callers spent blocked, summed.
	TotalWait time.Duration
	// Waiting is the number of Acquire calls blocked right now.
	Waiting int
}

// New returns a full bucket that refills at limit tokens per per and holds at
// most burst tokens. A burst of 0 means limit, and then burst follows the
// limit when [Limiter.Update] changes it. New returns an error naming the
// argument when limit < 1, per <= 0 or burst < 0.
func New(limit int, per time.Duration, burst int) (*Limiter, error) {
	if limit < 1 {
		return nil, fmt.Errorf("queuemax: rate limit: limit must be at least 1, got %d", limit)
	}
	if per <= 0 {
		return nil, fmt.Errorf("queuemax: rate limit: per must be positive, got %v", per)
	}
	if burst < 0 {
		return nil, fmt.Errorf("queuemax: rate limit: burst must be 0 (same as limit) or more, got %d", burst)
	}
	l := &Limiter{limit: limit, per: per, burst: burst, last: time.Now()}
	if burst == 0 {
		l.burst, l.autoBurst = limit, true
	}
	l.tokens = float64(l.burst)
	return l, nil
}

// PerSecond returns a limiter of n tokens per second with a burst of n. See
// [New].
func PerSecond(n int) (*Limiter, error) { return New(n, time.Second, 0) }

// PerMinute returns a limiter of n tokens per minute with a burst of n. See
// [New].
func PerMinute(n int) (*Limiter, error) { return New(n, time.Minute, 0) }

// PerHour returns a limiter of n tokens per hour with a burst of n. See
// [New].
func PerHour(n int) (*Limiter, error) { return New(n, time.Hour, 0) }

// Acquire takes one token, blocking until one is available or ctx ends.
// Blocked callers are served in arrival order; each sleeps until its token is
// due and does not spin. Acquire returns nil when it got a token, or ctx's
// error (without taking a token) when ctx ended first, including when ctx was
// already done on entry. On a nil *Limiter it returns nil at once.
func (l *Limiter) Acquire(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if err := ctx.Err(); err != nil {
		l.denied++
		l.mu.Unlock()
		return err
	}
	start := time.Now()
	l.refill(start)
	if len(l.waiters) == 0 && l.tokens+epsilon >= 1 {
		l.take()
		l.mu.Unlock()
		return nil
	}
	w := &waiter{kick: make(chan struct{}, 1)}
	l.waiters = append(l.waiters, w)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		// l.mu is held here.
		var due <-chan time.Time
		if l.waiters[0] == w {
			if l.tokens+epsilon >= 1 {
				l.take()
				l.dequeue(w)
				l.waited += time.Since(start)
				l.mu.Unlock()
				return nil
			}
			d := l.untilTokens(1)
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			due = timer.C
		}
		l.mu.Unlock()
		select {
		case <-due:
		case <-w.kick:
		case <-ctx.Done():
			l.mu.Lock()
			l.dequeue(w)
			l.denied++
			l.waited += time.Since(start)
			l.mu.Unlock()
			return ctx.Err()
		}
		l.mu.Lock()
		l.refill(time.Now())
	}
}

// TryAcquire takes one token if one is available now and reports whether it
// did. It never blocks, and it does not jump ahead of blocked Acquire calls:
// while any are waiting it returns false. On a nil *Limiter it returns true.
func (l *Limiter) TryAcquire() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(time.Now())
	if len(l.waiters) == 0 && l.tokens+epsilon >= 1 {
		l.take()
		return true
	}
	l.denied++
	return false
}

// Refund puts back one token taken by Acquire or TryAcquire whose work did
// not happen, for example a claim that found no job, so that idle polling
// does not use up the limit (a queue-max weakness). The bucket never exceeds
// its burst, and the grant is no longer counted in Stats.Granted. The first
// blocked Acquire call, if any, gets the token. On a nil *Limiter it does
// nothing.
func (l *Limiter) Refund() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(time.Now())
	l.tokens = min(float64(l.burst), l.tokens+1)
	if l.granted > 0 {
		l.granted--
	}
	l.kickHead()
}

// Remaining returns the number of tokens in the bucket now, possibly
// fractional. On a nil *Limiter it returns +Inf.
func (l *Limiter) Remaining() float64 {
	if l == nil {
		return math.Inf(1)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(time.Now())
	return l.tokens
}

// RetryAfter returns how long a new caller would wait for a token: 0 when
// TryAcquire would succeed now, otherwise the time until the bucket has
// refilled enough for every blocked Acquire call and then this one. On a nil
// *Limiter it returns 0.
func (l *Limiter) RetryAfter() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(time.Now())
	if len(l.waiters) == 0 && l.tokens+epsilon >= 1 {
		return 0
	}
	return l.untilTokens(float64(len(l.waiters) + 1))
}

// Update changes the limit to limit tokens per Per. Tokens earned so far are
// added at the old rate first. If the burst was defaulted from the limit (New
// with burst 0), it becomes limit too; an explicit burst is kept. Tokens above
// the new burst are dropped. Blocked callers recompute their wait at once.
// Update returns an error when limit < 1 or l is nil, and then changes
// nothing.
func (l *Limiter) Update(limit int) error {
	if l == nil {
		return fmt.Errorf("queuemax: rate limit: update of a nil limiter")
	}
	if limit < 1 {
		return fmt.Errorf("queuemax: rate limit: limit must be at least 1, got %d", limit)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(time.Now())
	l.limit = limit
	if l.autoBurst {
		l.burst = limit
	}
	l.tokens = min(l.tokens, float64(l.burst))
	l.kickHead()
	return nil
}

// Reset fills the bucket and zeroes the Granted, Denied and TotalWait
// counters. Blocked callers are served from the full bucket at once, in
// order. On a nil *Limiter it does nothing.
func (l *Limiter) Reset() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = float64(l.burst)
	l.last = time.Now()
	l.granted, l.denied, l.waited = 0, 0, 0
	l.kickHead()
}

// Stats returns a snapshot of l's configuration and counters. On a nil
// *Limiter it returns the zero Stats.
func (l *Limiter) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(time.Now())
	return Stats{
		Tokens:    l.tokens,
		Limit:     l.limit,
		Per:       l.per,
		Burst:     l.burst,
		Granted:   l.granted,
		Denied:    l.denied,
		TotalWait: l.waited,
		Waiting:   len(l.waiters),
	}
}

// refill adds the tokens earned since the last refill, capped at the burst.
// l.mu must be held.
func (l *Limiter) refill(now time.Time) {
	elapsed := now.Sub(l.last)
	if elapsed <= 0 {
		return
	}
	l.tokens = min(float64(l.burst), l.tokens+float64(elapsed)*float64(l.limit)/float64(l.per))
	l.last = now
}

// take removes one token and counts a grant. l.mu must be held.
func (l *Limiter) take() {
	l.tokens = max(0, l.tokens-1)
	l.granted++
}

// untilTokens returns how long until the bucket holds n tokens at the current
// rate, rounded up to the nanosecond. l.mu must be held.
func (l *Limiter) untilTokens(n float64) time.Duration {
	missing := n - l.tokens
	if missing <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(missing * float64(l.per) / float64(l.limit)))
}

// dequeue removes w from the waiters and, if w was the head, kicks the new
// head so that it starts its timer. l.mu must be held.
func (l *Limiter) dequeue(w *waiter) {
	i := slices.Index(l.waiters, w)
	if i < 0 {
		return
	}
	l.waiters = slices.Delete(l.waiters, i, i+1)
	if len(l.waiters) == 0 {
		l.waiters = nil // let the backing array go after a burst of waiters
	}
	if i == 0 {
		l.kickHead()
	}
}

// kickHead wakes the first waiter, if any, to look at the bucket again. l.mu
// must be held.
func (l *Limiter) kickHead() {
	if len(l.waiters) == 0 {
		return
	}
	select {
	case l.waiters[0].kick <- struct{}{}:
	default: // a kick is already pending
	}
}
