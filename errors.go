package queuemax

import (
	"errors"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/internal/codec"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// Sentinel errors. Test them with errors.Is.
var (
	// ErrClosed is returned by every Client method after Close.
	ErrClosed = store.ErrClosed
	// ErrLeaseLost is returned when a worker acknowledges a job it no longer
	// holds: orphan recovery or a purge took it back. Nothing was changed.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrJobNotFound is returned when a JobID names no stored job.
	ErrJobNotFound = store.ErrJobNotFound
	// ErrShardMismatch is returned by Open when Config.Shards differs from the
	// number of shard files already in Config.Dir.
	ErrShardMismatch = store.ErrShardMismatch
	// ErrNotDatabase is returned by Open when a shard file is not an SQLite
	// database.
	ErrNotDatabase = store.ErrNotDatabase
	// ErrReadOnly is returned by every write through a client opened with
	// Config.ReadOnly.
	ErrReadOnly = store.ErrReadOnly
	// ErrShardUnavailable is wrapped by the error Stats and WaitIdle return
	// when a shard could not be read (locked past Config.BusyTimeout,
	// corrupt, or gone).
	ErrShardUnavailable = errors.New("queuemax: shard unavailable")
	// ErrInvalidShard is returned for a shard index outside [0, Shards).
	ErrInvalidShard = store.ErrInvalidShard
	// ErrInvalidPayload is returned for a payload that is not a JSON object,
	// is larger than MaxPayloadBytes, or nests deeper than MaxPayloadDepth.
	ErrInvalidPayload = codec.ErrInvalidPayload
	// ErrInvalidPriority is returned for a priority outside 0–2.
	ErrInvalidPriority = enqueue.ErrInvalidPriority
	// ErrInvalidRetries is returned for a negative retry count.
	ErrInvalidRetries = enqueue.ErrInvalidRetries
	// ErrInvalidTag is returned for a bad job tag (Opts.Tags,
	// TaskOptions.Tags): empty, too long, with a space or comma, repeated,
	// or one too many; the error names it.
	ErrInvalidTag = enqueue.ErrInvalidTag
	// ErrInvalidTimeout is returned for a negative Opts.Timeout.
	ErrInvalidTimeout = enqueue.ErrInvalidTimeout
	// ErrInvalidConfig is wrapped by every Config validation error.
	ErrInvalidConfig = errors.New("queuemax: invalid config")
	// ErrUnknownTask is returned when a job names a task with no handler:
	// by an enqueue through a client that has handlers (unless
	// Config.AllowUnknownTasks is set), and recorded for a claimed job no
	// handler runs.
	ErrUnknownTask = queuemaxtype.ErrUnknownTask
	// ErrPayloadShape is matched by a *PayloadShapeError: a payload whose
	// keys or value types do not fit the task's parameters. An enqueue
	// refuses such a payload; a stored job whose payload no longer fits is
	// dead-lettered at once, never run on zero values.
	ErrPayloadShape = codec.ErrPayloadShape
	// ErrDuplicateTask is returned by Open when two handlers share a name.
	ErrDuplicateTask = errors.New("queuemax: duplicate task name")
	// ErrNotBound is returned by a Task that is not bound to a Client.
	ErrNotBound = errors.New("queuemax: task not bound to a client (use the generated New(client))")
	// ErrNoResult is returned by Result for a job that has not completed or
	// stored no result.
	ErrNoResult = errors.New("queuemax: job has no result")
	// ErrRunning is returned by Run when the client is already running.
	ErrRunning = errors.New("queuemax: client already running")
	// ErrJobFinished is returned by Client.Cancel for a job that already
	// ended (completed, failed or cancelled); the message names its status.
	ErrJobFinished = store.ErrJobFinished
	// ErrJobCancelled is the cause (context.Cause) of a handler's context
	// when Client.Cancel was called for its job while it ran.
	ErrJobCancelled = queuemaxtype.ErrJobCancelled
	// ErrCancelRequested is reported for a running job by Client.Heartbeat
	// (its lease was renewed) once Client.Cancel was called for it: stop
	// and record it with Fail(ctx, job, Cancel(err)).
	ErrCancelRequested = store.ErrCancelRequested
	// ErrTxUnsupported is returned by the transactional enqueues (EnqueueTx,
	// EnqueueManyTx, Task.EnqueueTx, the generated DelayTx, …) on the
	// embedded SQLite store: its jobs live in queuemax's own shard files,
	// which an application's transaction cannot span. Use the PostgreSQL
	// store (queuemaxpg) for them.
	ErrTxUnsupported = errors.New("queuemax: transactional enqueue needs the PostgreSQL store (queuemaxpg); the SQLite store cannot join an application's transaction")
	// ErrInvalidTx is wrapped by the error of a transactional enqueue whose
	// transaction is nil. A value of the wrong type gets the store's error,
	// which names the type it got and the types it takes.
	ErrInvalidTx = errors.New("queuemax: invalid transaction (want a pgx.Tx or a *sql.Tx of the pgx stdlib driver)")
)

// ConfigError names the Config field that failed validation.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "queuemax: config " + e.Field + ": " + e.Msg }

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// PayloadError explains why a payload was rejected: its Reason field says
// what is wrong. It wraps ErrInvalidPayload. See enqueue.PayloadError (go
// doc github.com/queuemax/queuemax/runtime/enqueue.PayloadError).
type PayloadError = enqueue.PayloadError

// LineError locates a bad record in an import file. Line is 1-based (for a
// JSON array file, the line where the element starts).
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// The control-flow errors a handler returns, and the errors the queue
// records; they are defined, with their full documentation, in package
// queuemaxtype, which the engine shares.
type (
	// PermanentError marks an error that must not be retried; see
	// queuemaxtype.PermanentError.
	PermanentError = queuemaxtype.PermanentError
	// RetryAfterError asks for the next attempt no sooner than its Delay;
	// see queuemaxtype.RetryAfterError.
	RetryAfterError = queuemaxtype.RetryAfterError
	// CancelError ends a job as cancelled; see queuemaxtype.CancelError.
	CancelError = queuemaxtype.CancelError
	// SnoozeError runs a job again after its Delay without spending an
	// attempt; see queuemaxtype.SnoozeError.
	SnoozeError = queuemaxtype.SnoozeError
	// SnoozeLimitError is recorded for a job dead-lettered because it
	// snoozed more than Config.MaxSnoozes times; see
	// queuemaxtype.SnoozeLimitError.
	SnoozeLimitError = queuemaxtype.SnoozeLimitError
	// PanicError is the error recorded for a handler that panicked; see
	// queuemaxtype.PanicError.
	PanicError = queuemaxtype.PanicError
	// TimeoutError is the error recorded for a job that ran past its
	// timeout; it is retryable. See queuemaxtype.TimeoutError.
	TimeoutError = queuemaxtype.TimeoutError
)

// Permanent wraps err so that the job goes straight to the dead-letter queue
// without further attempts. The cause stays reachable through errors.Is/As.
func Permanent(err error) error { return queuemaxtype.Permanent(err) }

// RetryAfter wraps err so that the next attempt runs after d instead of after
// the exponential backoff (an HTTP Retry-After header, for example). The
// attempt still counts against the job's retries.
func RetryAfter(d time.Duration, err error) error { return queuemaxtype.RetryAfter(d, err) }

// Cancel wraps err so that the handler returning it ends its job with
// status cancelled: no further attempt, no dead letter, event
// job_cancelled. err may be nil. A job cancelled by Client.Cancel while it
// runs ends the same way whatever its handler returns, unless it succeeds.
func Cancel(err error) error { return queuemaxtype.Cancel(err) }

// Snooze returned by a handler runs its job again after d (zero or
// negative: as soon as a worker is free) without spending an attempt,
// unlike RetryAfter: a job waiting for something that is not ready yet, not
// one that failed. The job's snooze count (Job.Snoozes) grows by one; past
// Config.MaxSnoozes the job is dead-lettered with a SnoozeLimitError.
func Snooze(d time.Duration) error { return queuemaxtype.Snooze(d) }
