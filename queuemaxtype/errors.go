package queuemaxtype

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors the engine and users share; the root package re-exports
// them.
var (
	// ErrJobCancelled is the cause (context.Cause) of a handler's context
	// when a cancel was requested for its job while it ran.
	ErrJobCancelled = errors.New("queuemax: job cancelled")
	// ErrUnknownTask is returned when a job names a task with no handler:
	// by an enqueue through a client that has handlers (unless
	// Config.AllowUnknownTasks is set), and recorded for a claimed job no
	// handler runs.
	ErrUnknownTask = errors.New("queuemax: unknown task")
)

// PermanentError marks an error that must not be retried. Create it with
// Permanent.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string {
	if e.Err == nil {
		return "permanent failure"
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so that the job goes straight to the dead-letter queue
// without further attempts. The cause stays reachable through errors.Is/As.
func Permanent(err error) error { return &PermanentError{Err: err} }

// RetryAfterError asks for the next attempt no sooner than Delay. Create it
// with RetryAfter.
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.Delay)
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err so that the next attempt runs after d instead of after
// the exponential backoff (an HTTP Retry-After header, for example). The
// attempt still counts against the job's retries.
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{Delay: d, Err: err} }

// CancelError ends a job as cancelled: it is not retried and not
// dead-lettered. Create it with Cancel.
type CancelError struct {
	Err error
}

func (e *CancelError) Error() string {
	if e.Err == nil {
		return "cancelled"
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel wraps err so that the handler returning it ends its job with
// status cancelled: no further attempt, no dead letter, event
// job_cancelled. err may be nil. A job cancelled by Client.Cancel while it
// runs ends the same way whatever its handler returns, unless it succeeds.
func Cancel(err error) error { return &CancelError{Err: err} }

// SnoozeError asks for the job to run again after Delay without spending
// an attempt. Create it with Snooze.
type SnoozeError struct {
	Delay time.Duration
}

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.Delay) }

// Snooze returned by a handler runs its job again after d (zero or
// negative: as soon as a worker is free) without spending an attempt,
// unlike RetryAfter: a job waiting for something that is not ready yet, not
// one that failed. The job's snooze count (Job.Snoozes) grows by one; past
// the client's Config.MaxSnoozes the job is dead-lettered with a
// SnoozeLimitError.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: max(d, 0)} }

// SnoozeLimitError is recorded for a job dead-lettered because it snoozed
// more than the client's Config.MaxSnoozes times.
type SnoozeLimitError struct {
	Snoozes, Max int
}

func (e *SnoozeLimitError) Error() string {
	return fmt.Sprintf("queuemax: job snoozed %d times, the limit is Config.MaxSnoozes = %d", e.Snoozes, e.Max)
}

// PanicError is the error recorded for a handler that panicked.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// TimeoutError is the error recorded for a job that ran past its timeout. It
// is retryable.
type TimeoutError struct{ Limit time.Duration }

func (e *TimeoutError) Error() string { return fmt.Sprintf("job exceeded %s timeout", e.Limit) }

// Timeout reports true, so that net.Error-style checks treat it as a timeout.
func (e *TimeoutError) Timeout() bool { return true }
