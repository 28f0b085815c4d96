// Package breaker is a circuit breaker for the worker loop: after Threshold
// consecutive failures it opens and rejects work for Timeout, then lets a
// single probe through and closes again if the probe succeeds.
//
// It fixes three weaknesses of queue-max's breaker:
//
//   - The half-open probe cannot wedge. [Breaker.Allow] hands out a [Ticket]
//     and the caller settles it with exactly one of Success, Failure or
//     Release; Release (the probe found no job, or its error was not a
//     failure) frees the probe slot without changing state.
//   - Failures recorded while open do not push the recovery deadline forward:
//     the breaker half-opens Timeout after it opened.
//   - State-change notifications are queued in order and delivered outside
//     the lock, one at a time, so none is lost or reordered under contention.
//
// A nil *Breaker is always closed and records nothing, so callers need no
// branches.
//
// Not API: import github.com/queuemax/queuemax instead. Its documentation is
// the reference for the root package's CircuitBreaker, CircuitBreakerConfig,
// CircuitState and CircuitOpenError, which alias Breaker, Config, State and
// OpenError: go doc github.com/queuemax/queuemax/runtime/breaker.Breaker.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults for zero Config fields, as in queue-max.
const (
	// DefaultThreshold is the number of consecutive failures that opens the
	// breaker when Config.Threshold is zero.
	DefaultThreshold = 5
	// DefaultTimeout is how long the breaker stays open when Config.Timeout
	// is zero.
	DefaultTimeout = 60 * time.Second
)

// ErrOpen is matched (with errors.Is) by every [OpenError]: the breaker
// rejected the call without running it.
var ErrOpen = errors.New("queuemax: circuit breaker open")

// State is the state of a Breaker.
type State int

const (
	// Closed lets every call through and counts consecutive failures.
	Closed State = iota
	// Open rejects every call until Timeout has passed since it opened.
	Open
	// HalfOpen lets one probe call through; its success closes the breaker
	// and its failure opens it again.
	HalfOpen
)

// String returns "closed", "open" or "half_open", queue-max's names.
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Config configures a Breaker. The zero value is valid.
type Config struct {
	// Threshold is the number of consecutive failures (failures since the
	// last success recorded by anyone) that opens a closed breaker. Zero
	// means 5. Negative is an error.
	Threshold int
	// Timeout is how long the breaker stays open before it lets a probe
	// through. It is measured from the moment the breaker opened; failures
	// recorded while open do not extend it. Zero means 60s. Negative is an
	// error.
	Timeout time.Duration
	// OnStateChange, if set, is called after every state change with the
	// old and new state. Calls are made in transition order, one at a time,
	// never with the breaker's lock held, on the goroutine of some caller of
	// a Breaker method (not necessarily the one that caused the change), so
	// it may call the Breaker's methods. It should return quickly and must
	// not panic; a panic propagates to that caller, and the notifications
	// still queued are delivered after the next state change.
	OnStateChange func(from, to State)
	// IsFailure, if set, decides which errors count as failures in
	// [Breaker.Call] and [Ticket.Done]. An error it rejects (a permanent
	// client error, say) counts as neither success nor failure and frees the
	// probe. Nil means every non-nil error is a failure. Direct calls to
	// Failure do not consult it.
	IsFailure func(error) bool
}

// Stats is a snapshot of a Breaker.
type Stats struct {
	// State is the current state. An open breaker whose Timeout has passed
	// still reports Open until the next Allow moves it to HalfOpen.
	State State
	// Failures is the number of consecutive failures.
	Failures int
	// Threshold is the configured threshold.
	Threshold int
	// Rejected counts calls rejected since creation or the last Reset.
	Rejected uint64
	// Timeout is the configured open timeout.
	Timeout time.Duration
	// RecoveryRemaining is how long until an open breaker lets a probe
	// through; zero when not open or when a probe is already allowed.
	RecoveryRemaining time.Duration
	// TotalOpen is the time spent in state Open, summed over every open
	// period including the current one. Reset does not zero it.
	TotalOpen time.Duration
	// StateChanges counts state transitions. Reset does not zero it.
	StateChanges uint64
	// ProbeInFlight reports whether a half-open probe ticket is outstanding.
	ProbeInFlight bool
}

// OpenError is returned by [Breaker.Call] when the breaker rejects the call.
// It matches [ErrOpen] with errors.Is.
type OpenError struct {
	// State is Open, or HalfOpen when the probe is already taken.
	State State
	// RetryIn is how long until an open breaker lets a probe through. It is
	// zero when half-open: the probe's outcome decides.
	RetryIn time.Duration
	// Failures is the number of consecutive failures.
	Failures int
	// Threshold is the configured threshold.
	Threshold int
}

// Error describes the rejection, for example
// "queuemax: circuit breaker open (retry in 42s, failures 5/5)".
func (e *OpenError) Error() string {
	if e.State == HalfOpen {
		return fmt.Sprintf("queuemax: circuit breaker half_open (probe in flight, failures %d/%d)", e.Failures, e.Threshold)
	}
	return fmt.Sprintf("queuemax: circuit breaker %s (retry in %v, failures %d/%d)", e.State, e.RetryIn, e.Failures, e.Threshold)
}

// Unwrap returns ErrOpen.
func (e *OpenError) Unwrap() error { return ErrOpen }

// Breaker is a circuit breaker. Create one with [New]. It is safe for
// concurrent use. A nil *Breaker is always closed.
type Breaker struct {
	threshold int
	timeout   time.Duration
	onChange  func(from, to State)
	isFailure func(error) bool

	mu         sync.Mutex
	state      State
	failures   int
	rejected   uint64
	openedAt   time.Time     // start of the current Open period; recovery is due at openedAt+timeout
	openTotal  time.Duration // completed Open periods
	changes    uint64
	probe      uint64 // ID of the outstanding probe ticket; 0 when none
	lastProbe  uint64 // last probe ID handed out
	pending    []transition
	delivering bool // some goroutine is draining pending
}

type transition struct{ from, to State }

// New returns a closed Breaker. It returns an error naming the field when
// Threshold or Timeout is negative.
func New(cfg Config) (*Breaker, error) {
	if cfg.Threshold < 0 {
		return nil, fmt.Errorf("queuemax: circuit breaker: Threshold must be at least 1 (0 means %d), got %d", DefaultThreshold, cfg.Threshold)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("queuemax: circuit breaker: Timeout must be positive (0 means %v), got %v", DefaultTimeout, cfg.Timeout)
	}
	b := &Breaker{
		threshold: cfg.Threshold,
		timeout:   cfg.Timeout,
		onChange:  cfg.OnStateChange,
		isFailure: cfg.IsFailure,
	}
	if b.threshold == 0 {
		b.threshold = DefaultThreshold
	}
	if b.timeout == 0 {
		b.timeout = DefaultTimeout
	}
	return b, nil
}

// Ticket is permission to run one guarded operation, returned by
// [Breaker.Allow]. Settle it with exactly one of Success, Failure, Release or
// Done. For the half-open probe this is what frees or resolves the probe
// slot; for other tickets Release does nothing. Settling a ticket twice
// records its outcome twice. The zero Ticket ignores every call.
type Ticket struct {
	b     *Breaker
	probe uint64 // probe ID, or 0 for a ticket issued while closed
}

// Probe reports whether t is the half-open probe.
func (t Ticket) Probe() bool { return t.probe != 0 }

// Success records that the operation succeeded: failures are zeroed and a
// half-open breaker closes.
func (t Ticket) Success() {
	if t.b != nil {
		t.b.record(true, t.probe)
	}
}

// Failure records that the operation failed: a half-open breaker opens
// again, and a closed one opens at Threshold consecutive failures.
func (t Ticket) Failure() {
	if t.b != nil {
		t.b.record(false, t.probe)
	}
}

// Release records that nothing was tried (no job was found, or the outcome
// says nothing about the service). The probe slot, if t holds it, is freed
// for the next Allow; state and counters are unchanged.
func (t Ticket) Release() {
	if t.b != nil {
		t.b.release(t.probe)
	}
}

// Done settles t from the operation's error: nil is a Success, an error that
// Config.IsFailure rejects is a Release, and any other error is a Failure.
func (t Ticket) Done(err error) {
	switch {
	case t.b == nil:
	case err == nil:
		t.Success()
	case t.b.isFailure != nil && !t.b.isFailure(err):
		t.Release()
	default:
		t.Failure()
	}
}

// Allow reports whether an operation may run now and returns the Ticket to
// settle when it has. A closed breaker always allows. An open breaker rejects
// until Timeout has passed since it opened; the first Allow after that moves
// it to HalfOpen and takes the probe. A half-open breaker allows only while
// no probe is outstanding. Rejections are counted in Stats.Rejected and
// return the zero Ticket. On a nil *Breaker Allow always allows.
func (b *Breaker) Allow() (Ticket, bool) {
	t, rej := b.allow()
	return t, rej == nil
}

// allow is Allow returning the rejection's details.
func (b *Breaker) allow() (Ticket, *OpenError) {
	if b == nil {
		return Ticket{}, nil
	}
	b.mu.Lock()
	now := time.Now()
	changed := false
	if b.state == Open && now.Sub(b.openedAt) >= b.timeout {
		changed = b.setState(HalfOpen, now)
	}
	var (
		t   Ticket
		rej *OpenError
	)
	switch {
	case b.state == Closed:
		t = Ticket{b: b}
	case b.state == HalfOpen && b.probe == 0:
		b.lastProbe++
		b.probe = b.lastProbe
		t = Ticket{b: b, probe: b.probe}
	default:
		b.rejected++
		rej = &OpenError{State: b.state, RetryIn: b.recoveryRemaining(now), Failures: b.failures, Threshold: b.threshold}
	}
	b.mu.Unlock()
	if changed {
		b.notify()
	}
	return t, rej
}

// Success records a success from a caller that holds no ticket: failures are
// zeroed and a half-open breaker closes. An open breaker stays open.
func (b *Breaker) Success() {
	if b != nil {
		b.record(true, 0)
	}
}

// Failure records a failure from a caller that holds no ticket. A closed
// breaker opens at Threshold consecutive failures and a half-open one opens
// at once. An open breaker counts it but keeps its recovery deadline.
func (b *Breaker) Failure() {
	if b != nil {
		b.record(false, 0)
	}
}

// record applies an outcome; probe is the reporting ticket's probe ID.
func (b *Breaker) record(success bool, probe uint64) {
	b.mu.Lock()
	if probe != 0 && probe == b.probe {
		b.probe = 0
	}
	now := time.Now()
	changed := false
	if success {
		b.failures = 0
		if b.state == HalfOpen {
			changed = b.setState(Closed, now)
		}
	} else {
		b.failures++
		switch b.state {
		case Closed:
			if b.failures >= b.threshold {
				changed = b.setState(Open, now)
			}
		case HalfOpen:
			changed = b.setState(Open, now)
		case Open:
			// Keep openedAt: failures while open (jobs that started before
			// the breaker opened) must not postpone recovery.
		}
	}
	b.mu.Unlock()
	if changed {
		b.notify()
	}
}

// release frees the probe slot if probe holds it.
func (b *Breaker) release(probe uint64) {
	b.mu.Lock()
	if probe != 0 && probe == b.probe {
		b.probe = 0
	}
	b.mu.Unlock()
}

// Call runs fn if the breaker allows it and records the outcome: nil is a
// success, an error that Config.IsFailure rejects counts as nothing (and
// frees the probe), any other error is a failure. If fn returns
// context.Canceled after ctx was cancelled, nothing is counted either: a
// shutdown says nothing about the service. If fn panics, a failure is
// recorded and the panic continues.
//
// Call returns fn's error unchanged, ctx's error without running fn if ctx is
// already done, or an [*OpenError] (matching [ErrOpen]) without running fn if
// the breaker rejects the call. On a nil *Breaker it just runs fn.
func (b *Breaker) Call(ctx context.Context, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, rej := b.allow()
	if rej != nil {
		return rej
	}
	settled := false
	defer func() {
		if !settled {
			t.Failure() // fn panicked
		}
	}()
	err := fn(ctx)
	settled = true
	if err != nil && errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
		t.Release()
		return err
	}
	t.Done(err)
	return err
}

// State returns the current state. An open breaker whose Timeout has passed
// reports Open until the next Allow. On a nil *Breaker it returns Closed.
func (b *Breaker) State() State {
	if b == nil {
		return Closed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Reset closes the breaker and zeroes the failure and rejection counts; an
// outstanding probe ticket no longer holds the probe. StateChanges and
// TotalOpen are kept. On a nil *Breaker it does nothing.
func (b *Breaker) Reset() {
	if b == nil {
		return
	}
	b.mu.Lock()
	changed := b.setState(Closed, time.Now())
	b.failures, b.rejected, b.probe = 0, 0, 0
	b.mu.Unlock()
	if changed {
		b.notify()
	}
}

// Stats returns a snapshot of b. On a nil *Breaker it returns the zero Stats.
func (b *Breaker) Stats() Stats {
	if b == nil {
		return Stats{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	total := b.openTotal
	if b.state == Open {
		total += now.Sub(b.openedAt)
	}
	return Stats{
		State:             b.state,
		Failures:          b.failures,
		Threshold:         b.threshold,
		Rejected:          b.rejected,
		Timeout:           b.timeout,
		RecoveryRemaining: b.recoveryRemaining(now),
		TotalOpen:         total,
		StateChanges:      b.changes,
		ProbeInFlight:     b.probe != 0,
	}
}

// recoveryRemaining returns how long until an open breaker half-opens. b.mu
// must be held.
func (b *Breaker) recoveryRemaining(now time.Time) time.Duration {
	if b.state != Open {
		return 0
	}
	return max(0, b.timeout-now.Sub(b.openedAt))
}

// setState moves to state to, keeps the open-time accounting, queues a
// notification and reports whether the state changed. Any change frees the
// probe slot. b.mu must be held; after a change the caller calls notify once
// it has unlocked.
func (b *Breaker) setState(to State, now time.Time) bool {
	from := b.state
	if from == to {
		return false
	}
	if from == Open {
		b.openTotal += now.Sub(b.openedAt)
	}
	if to == Open {
		b.openedAt = now
	}
	if to == Closed {
		b.failures = 0
	}
	b.probe = 0
	b.state = to
	b.changes++
	if b.onChange != nil {
		b.pending = append(b.pending, transition{from, to})
	}
	return true
}

// notify delivers queued notifications in order, one at a time and outside
// the lock. Every method that queues one calls it after unlocking. If another
// goroutine is already delivering, that goroutine also delivers whatever this
// caller queued (it checks for more under the lock before it stops), so
// notify returns at once.
func (b *Breaker) notify() {
	if b.onChange == nil {
		return
	}
	b.mu.Lock()
	if b.delivering {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for len(b.pending) > 0 {
		tr := b.pending[0]
		b.pending = b.pending[1:]
		if len(b.pending) == 0 {
			b.pending = nil
		}
		b.mu.Unlock()
		b.deliver(tr)
		b.mu.Lock()
	}
	b.delivering = false
	b.mu.Unlock()
}

// deliver calls OnStateChange. If it panics, delivery is handed back so that
// the next notify delivers the rest, and the panic continues.
func (b *Breaker) deliver(tr transition) {
	ok := false
	defer func() {
		if !ok {
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	b.onChange(tr.from, tr.to)
	ok = true
}
