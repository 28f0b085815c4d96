package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Job is a stored job (queuemaxtype.Job).
type Job = store.Job

// Handler is how the engine runs one task's jobs: the task's function
// (which decodes the payload itself) and its execution settings.
type Handler struct {
	// Func runs one job; a non-nil result is stored JSON-encoded.
	Func func(ctx context.Context, job *Job) (any, error)
	// Timeout bounds one execution (a job's own Timeout wins); zero: none.
	Timeout time.Duration
	// RetryOn selects errors retried in-process, up to InlineRetries times
	// (zero: 3), before the attempt counts as failed. Nil: none.
	RetryOn       func(error) bool
	InlineRetries int
}

// ExecConfig is what an Executor needs to run and finish a client's jobs.
type ExecConfig struct {
	Store store.Store
	// Handlers run the jobs of their task; the one under "" is a catch-all
	// for tasks without their own.
	Handlers map[string]*Handler
	// Default runs jobs stored without a task (queue-max's), when no
	// catch-all does. Nil: none.
	Default *Handler
	// Middleware wraps every execution, the first outermost.
	Middleware []queuemaxtype.WorkMiddleware
	Hooks      queuemaxtype.Hooks
	// Events receives the outcomes' events (required).
	Events *Events
	// RetryDelay is the backoff base of a job whose row sets none (the
	// enqueue stores every job's).
	RetryDelay time.Duration
	// MaxSnoozes is how often a job may snooze before it is dead-lettered.
	MaxSnoozes int
	// KeepCompleted keeps completed jobs without a result as completed
	// rows (CompleteParams.Keep) instead of deleting them, for retention.
	KeepCompleted bool
	// Wake, when set, is signalled (without blocking) after a retry or a
	// snooze is recorded, so that an idle producer claims again.
	Wake chan<- struct{}
	Now  func() time.Time // UTC
	Log  *slog.Logger
}

// Executor runs one attempt of a job (Execute) and records how it ended
// (Finish): the one path every job takes, under Run's workers and
// acknowledger, Client.Work, and Client.Complete and Client.Fail alike.
// It is safe for concurrent use.
type Executor struct {
	cfg ExecConfig
}

// NewExecutor returns an executor for cfg.
func NewExecutor(cfg ExecConfig) *Executor {
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Executor{cfg: cfg}
}

// handler returns the handler of j's task: its own, the default one for a
// job without a task, else the catch-all.
func (x *Executor) handler(j *Job) *Handler {
	if h, ok := x.cfg.Handlers[j.Task]; ok {
		return h
	}
	if j.Task == "" && x.cfg.Default != nil {
		return x.cfg.Default
	}
	return x.cfg.Handlers[""]
}

// Execute runs one attempt of j on the calling goroutine: Hooks.OnStart,
// then the work middleware around the handler, which runs with its
// timeout and in-process retries; a panic in the handler or a middleware
// fails the attempt with a *PanicError. A job of no known task fails for
// good (ErrUnknownTask).
func (x *Executor) Execute(ctx context.Context, j *Job) (any, error) {
	ctx = withStep(ctx, x.cfg.Store, j) // workflow.go
	ctx = x.withJobSteps(ctx, j)        // jobsteps.go
	h := x.handler(j)
	if h == nil {
		return nil, queuemaxtype.Permanent(fmt.Errorf("%w: %q (no handler registered)", queuemaxtype.ErrUnknownTask, j.Task))
	}
	if x.cfg.Hooks.OnStart != nil {
		x.hook(ctx, "on_start", func() { x.cfg.Hooks.OnStart(ctx, j) })
	}
	mws := x.cfg.Middleware
	if len(mws) == 0 {
		return x.call(ctx, h, j)
	}
	var run func(i int, ctx context.Context) (any, error)
	run = func(i int, ctx context.Context) (result any, err error) {
		if i == len(mws) {
			return x.call(ctx, h, j)
		}
		defer func() {
			if r := recover(); r != nil {
				result, err = nil, panicError(r)
			}
		}()
		return mws[i].Work(ctx, j, func(ctx context.Context) (any, error) { return run(i+1, ctx) })
	}
	return run(0, ctx)
}

// call runs the handler with the task's timeout, converting panics into
// errors and retrying in-process on errors RetryOn selects.
func (x *Executor) call(ctx context.Context, h *Handler, j *Job) (any, error) {
	inline := 0
	if h.RetryOn != nil {
		inline = h.InlineRetries
		if inline == 0 {
			inline = 3
		}
	}
	for attempt := 0; ; attempt++ {
		result, err := callOnce(ctx, h, j)
		if err == nil || attempt >= inline || !h.RetryOn(err) || ctx.Err() != nil {
			return result, err
		}
		d := min(100*time.Millisecond<<attempt, 5*time.Second)
		x.cfg.Log.DebugContext(ctx, "inline retry", "task", j.Task, "job_id", int64(j.ID), "attempt", attempt+1, "err", err)
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, context.Cause(ctx)
		case <-timer.C:
		}
	}
}

func callOnce(ctx context.Context, h *Handler, j *Job) (result any, err error) {
	limit := h.Timeout
	if j.Timeout > 0 {
		limit = j.Timeout // the job's own (Opts.Timeout)
	}
	if limit > 0 {
		parent := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
		defer func() {
			// A handler that returns after its deadline passed (and not
			// because the whole run is stopping) timed out, whatever it
			// returned: an attempt that outlived its timeout is a
			// retryable *TimeoutError, also when the handler ignored its
			// context and returned nil.
			if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				if err == nil {
					result, err = nil, &queuemaxtype.TimeoutError{Limit: limit}
				} else if _, ok := errors.AsType[*queuemaxtype.TimeoutError](err); !ok {
					err = fmt.Errorf("%w: %w", &queuemaxtype.TimeoutError{Limit: limit}, err)
				}
			}
		}()
	}
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, panicError(r)
		}
	}()
	return h.Func(newStepRun(ctx), j)
}

// hook runs a user hook, recovering and logging its panic.
func (x *Executor) hook(ctx context.Context, name string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			x.cfg.Log.ErrorContext(ctx, "hook panicked", "hook", name, "panic", fmt.Sprint(r))
		}
	}()
	fn()
}

// panicError turns a recovered panic into a *PanicError with its stack.
func panicError(r any) *queuemaxtype.PanicError {
	return &queuemaxtype.PanicError{Value: r, Stack: string(debug.Stack())}
}
