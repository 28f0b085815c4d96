package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// MaxBackoff caps every retry delay Backoff computes.
const MaxBackoff = time.Hour

// Backoff returns the delay before the retry that follows failed attempt n
// (n ≥ 1): base·2^(n−1), with ±20% jitter, capped at MaxBackoff. The
// jitter is applied before the cap, so capped delays are exactly the cap.
func Backoff(base time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(base) * float64(uint64(1)<<min(n-1, 40))
	d *= 1 + (rand.Float64()*0.4 - 0.2)
	if d >= float64(MaxBackoff) {
		return MaxBackoff
	}
	return time.Duration(d)
}

// Classify decides whether err is worth retrying, by type and never by the
// text of its message (the root package's Classify documents the rules).
func Classify(err error) queuemaxtype.Decision {
	type Decision = queuemaxtype.Decision
	if s, ok := errors.AsType[*queuemaxtype.SnoozeError](err); ok {
		return Decision{Delay: s.Delay, Reason: "snooze"}
	}
	if _, ok := errors.AsType[*queuemaxtype.CancelError](err); ok {
		return Decision{Permanent: true, Reason: "cancelled"}
	}
	if _, ok := errors.AsType[*queuemaxtype.PermanentError](err); ok {
		return Decision{Permanent: true, Reason: "permanent"}
	}
	if ra, ok := errors.AsType[*queuemaxtype.RetryAfterError](err); ok {
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

// Outcome names what becomes of an attempt of job whose handler returned
// err (the root package's Outcome documents it).
func Outcome(job *Job, err error) string {
	if err == nil {
		return queuemaxtype.OutcomeCompleted
	}
	return outcome(job, err, Classify(err))
}

// outcome is Outcome of a failure whose classification d is known: the
// one place that decides a dead letter (a permanent error, or the
// attempts spent).
func outcome(job *Job, err error, d queuemaxtype.Decision) string {
	if _, ok := errors.AsType[*queuemaxtype.CancelError](err); ok {
		return queuemaxtype.OutcomeCancelled
	}
	if _, ok := errors.AsType[*queuemaxtype.SnoozeError](err); ok {
		return queuemaxtype.OutcomeSnoozed
	}
	if d.Permanent || store.AttemptsSpent(job.Attempts, job.MaxAttempts) {
		return queuemaxtype.OutcomeDeadLettered
	}
	return queuemaxtype.OutcomeRetry
}

// Decide returns what a failed attempt of job with jobErr becomes: a
// cancellation, a snooze (or a dead letter past MaxSnoozes), a dead letter,
// or a retry after the error's delay or the backoff of the base stored
// with the job (a row without one: ExecConfig.RetryDelay).
func (x *Executor) Decide(job *Job, jobErr error) queuemaxtype.FailOutcome {
	type FailOutcome = queuemaxtype.FailOutcome
	d := Classify(jobErr) // once per failure
	oc := outcome(job, jobErr, d)
	switch oc {
	case queuemaxtype.OutcomeCancelled:
		return FailOutcome{Decision: d, Cancelled: true}
	case queuemaxtype.OutcomeSnoozed:
		if job.Snoozes >= x.cfg.MaxSnoozes {
			return FailOutcome{Decision: queuemaxtype.Decision{Permanent: true, Reason: "snooze limit"}, Dead: true}
		}
		s, _ := errors.AsType[*queuemaxtype.SnoozeError](jobErr)
		return FailOutcome{Decision: d, Snoozed: true, RetryAt: x.cfg.Now().Add(s.Delay)}
	}
	out := FailOutcome{Decision: d, Dead: oc == queuemaxtype.OutcomeDeadLettered}
	if !out.Dead {
		delay := d.Delay
		if delay <= 0 {
			// The base resolved at enqueue (runtime/enqueue), stored with
			// the job.
			base := job.RetryDelay
			if base <= 0 {
				base = x.cfg.RetryDelay
			}
			delay = Backoff(base, job.Attempts)
		}
		out.RetryAt = x.cfg.Now().Add(delay)
	}
	return out
}

// Lease is the lease that fences an acknowledgement of j: its claim's
// token and worker.
func Lease(j *Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Lease, WorkerID: j.WorkerID} }

// Attempt is one ended attempt of a claimed job on its way to the store.
type Attempt struct {
	Job *Job
	// Ctx is the job's context, for hooks and logs; nil: Finish's.
	Ctx context.Context
	// Result and Err are what the handler returned.
	Result any
	Err    error
	// Ran is set when the attempt ran here (Run's workers, Client.Work):
	// its outcome is logged and the Hooks run. A manual acknowledgement
	// (Client.Complete, Client.Fail) only records and emits.
	Ran bool

	// Outcome is what Finish recorded (OutcomeCompleted, OutcomeRetry,
	// ...), Fail its decision for a failure; set by Prepare.
	Outcome string
	Fail    queuemaxtype.FailOutcome

	prepared bool
	raw      json.RawMessage // the encoded result of a success
	msg      string          // the error recorded for a failure
}

// Prepare encodes a success's result (a result that cannot be encoded
// fails the job for good) or decides a failure's outcome. It does no I/O;
// Finish calls it for attempts not prepared yet, so that a worker may
// encode on its own goroutine before handing a success on.
func (x *Executor) Prepare(a *Attempt) {
	if a.prepared {
		return
	}
	a.prepared = true
	if a.Err == nil {
		raw, err := encode(a.Result)
		if err == nil {
			a.raw, a.Outcome = raw, queuemaxtype.OutcomeCompleted
			return
		}
		// The job ran; a result we cannot store must not re-run it.
		a.Err = err
	}
	a.Fail = x.Decide(a.Job, a.Err)
	switch {
	case a.Fail.Cancelled:
		a.Outcome = queuemaxtype.OutcomeCancelled
	case a.Fail.Snoozed:
		a.Outcome = queuemaxtype.OutcomeSnoozed
	case a.Fail.Dead:
		a.Outcome = queuemaxtype.OutcomeDeadLettered
	default:
		a.Outcome = queuemaxtype.OutcomeRetry
	}
}

// Succeeded reports whether a prepared attempt completes its job.
func (a *Attempt) Succeeded() bool { return a.Outcome == queuemaxtype.OutcomeCompleted }

// encode encodes a handler's result for storage; nil stores none.
func encode(result any) (json.RawMessage, error) {
	if result == nil || isNilValue(result) {
		return nil, nil
	}
	b, err := json.Marshal(result)
	if err != nil {
		return nil, queuemaxtype.Permanent(fmt.Errorf("encode result: %w", err))
	}
	return b, nil
}

func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// FinishOpts tune Finish for Run's engine; the zero value suits a single
// synchronous call.
type FinishOpts struct {
	// Retry, when set, is asked whether to retry the items that failed
	// with a transient storage error (try counts from 0); it waits
	// before it says yes.
	Retry func(try int) bool
	// Recorded, when set, runs for each attempt (by index) once its write
	// has returned (err nil: committed), before its event.
	Recorded func(i int, err error)
}

// Finish records the outcomes of ended attempts, lease-fenced: the
// successes in one Store.Complete call and the failures in one Store.Fail
// call (one transaction per shard each), retrying items that failed with a
// transient storage error while o.Retry allows. Then, for each attempt, in
// order, it runs o.Recorded and, if the attempt committed, emits its event,
// wakes the producer for a retry or a snooze and, for an attempt that Ran
// here, logs the outcome and runs Hooks.OnComplete or Hooks.OnError. It
// returns each attempt's storage error: nil once recorded,
// store.ErrLeaseLost (changing nothing) if its claim no longer held.
//
// Finish is the one function that finishes an attempt: Run's workers
// (failures) and acknowledger (successes, batched), Client.Work and
// Client.Complete/Fail all end here.
func (x *Executor) Finish(ctx context.Context, as []*Attempt, o FinishOpts) []error {
	now := x.cfg.Now()
	var (
		done, failed []int // indexes into as
		cps          []store.CompleteParams
		fps          []store.FailParams
		errs         = make([]error, len(as))
	)
	for i, a := range as {
		x.Prepare(a)
		if a.Succeeded() {
			if cps == nil {
				done, cps = make([]int, 0, len(as)), make([]store.CompleteParams, 0, len(as))
			}
			done = append(done, i)
			cps = append(cps, store.CompleteParams{Lease: Lease(a.Job), Result: a.raw, Keep: x.cfg.KeepCompleted, Now: now})
			continue
		}
		failed = append(failed, i)
		recorded := a.Err
		if _, ok := errors.AsType[*queuemaxtype.SnoozeError](recorded); ok && a.Fail.Dead {
			recorded = &queuemaxtype.SnoozeLimitError{Snoozes: a.Job.Snoozes + 1, Max: x.cfg.MaxSnoozes}
		}
		a.msg = "unknown error"
		if recorded != nil {
			a.msg = recorded.Error()
		}
		fps = append(fps, store.FailParams{Lease: Lease(a.Job), Error: a.msg, ErrorType: errorType(recorded),
			Stack: stackOf(a.Err), Dead: a.Fail.Dead, Cancelled: a.Fail.Cancelled, Snooze: a.Fail.Snoozed,
			RetryAt: a.Fail.RetryAt, Now: now})
	}
	if len(cps) > 0 {
		x.write(done, errs, o.Retry, func(idx []int) []error {
			return x.cfg.Store.Complete(ctx, pick(cps, done, idx))
		})
	}
	if len(fps) > 0 {
		x.write(failed, errs, o.Retry, func(idx []int) []error {
			return x.cfg.Store.Fail(ctx, pick(fps, failed, idx))
		})
	}
	for i, a := range as {
		if o.Recorded != nil {
			o.Recorded(i, errs[i])
		}
		if errs[i] == nil {
			x.settled(ctx, a)
		}
	}
	x.workflowEnds(ctx, as, errs) // workflow.go
	return errs
}

// pick returns the params of the attempts idx (indexes into as) among ps,
// whose i-th entry belongs to attempt of[i].
func pick[P any](ps []P, of, idx []int) []P {
	if len(idx) == len(of) {
		return ps
	}
	out := make([]P, 0, len(idx))
	k := 0
	for _, i := range idx {
		for of[k] != i {
			k++
		}
		out = append(out, ps[k])
	}
	return out
}

// write runs op on the attempts idx and stores each one's error in errs,
// retrying transient errors while retry allows.
func (x *Executor) write(idx []int, errs []error, retry func(int) bool, op func(idx []int) []error) {
	pending := idx
	for try := 0; ; try++ {
		var again []int
		for k, err := range op(pending) {
			errs[pending[k]] = err
			if transient(err) {
				again = append(again, pending[k])
			}
		}
		if len(again) == 0 || retry == nil || !retry(try) {
			return
		}
		pending = again
	}
}

// settled emits, logs and runs the hooks of a recorded attempt.
func (x *Executor) settled(ctx context.Context, a *Attempt) {
	j, msg := a.Job, a.msg
	jctx := a.Ctx
	if jctx == nil {
		jctx = ctx
	}
	log, hooks := x.cfg.Log, x.cfg.Hooks
	ev := Event{JobID: j.ID, Shard: j.Shard, Task: j.Task, Attempt: j.Attempts}
	switch a.Outcome {
	case queuemaxtype.OutcomeCompleted:
		ev.Kind = queuemaxtype.EventCompleted
		x.cfg.Events.Emit(jctx, ev)
		if !a.Ran {
			return
		}
		if log.Enabled(jctx, slog.LevelDebug) {
			log.LogAttrs(jctx, slog.LevelDebug, "job completed", slog.String("task", j.Task), slog.Int64("job_id", int64(j.ID)))
		}
		if hooks.OnComplete != nil {
			x.hook(jctx, "on_complete", func() { hooks.OnComplete(jctx, j, a.Result) })
		}
		return
	case queuemaxtype.OutcomeSnoozed:
		ev.Kind, ev.RetryAt = queuemaxtype.EventSnoozed, a.Fail.RetryAt
		x.cfg.Events.Emit(jctx, ev)
		x.wake()
		if a.Ran {
			log.DebugContext(jctx, "job snoozed", "task", j.Task, "job_id", int64(j.ID), "snoozes", j.Snoozes+1, "run_at", a.Fail.RetryAt)
		}
		return
	case queuemaxtype.OutcomeCancelled:
		ev.Kind, ev.Error = queuemaxtype.EventCancelled, msg
		x.cfg.Events.Emit(jctx, ev)
		if a.Ran {
			log.InfoContext(jctx, "job cancelled", "task", j.Task, "job_id", int64(j.ID), "attempt", j.Attempts, "err", a.Err)
		}
		return
	case queuemaxtype.OutcomeDeadLettered:
		ev.Kind, ev.Error = queuemaxtype.EventFailed, msg
		x.cfg.Events.Emit(jctx, ev)
		if !a.Ran {
			return
		}
		log.WarnContext(jctx, "job dead-lettered", "task", j.Task, "job_id", int64(j.ID), "attempt", j.Attempts, "err", a.Err)
	default:
		ev.Kind, ev.Error, ev.RetryAt = queuemaxtype.EventRetried, msg, a.Fail.RetryAt
		x.cfg.Events.Emit(jctx, ev)
		x.wake()
		if !a.Ran {
			return
		}
		log.WarnContext(jctx, "job failed; retry scheduled", "task", j.Task, "job_id", int64(j.ID), "attempt", j.Attempts,
			"retry_at", a.Fail.RetryAt, "err", a.Err)
	}
	if hooks.OnError != nil {
		x.hook(jctx, "on_error", func() { hooks.OnError(jctx, j, a.Err, a.Fail) })
	}
}

// wake signals the producer without blocking.
func (x *Executor) wake() {
	if x.cfg.Wake == nil {
		return
	}
	select {
	case x.cfg.Wake <- struct{}{}:
	default:
	}
}

func stackOf(err error) string {
	if pe, ok := errors.AsType[*queuemaxtype.PanicError](err); ok {
		return pe.Stack
	}
	return ""
}

// errorType names err's concrete type, as queue-max's error_type column
// holds the exception class; the types of package queuemaxtype are named
// as the root package re-exports them (*queuemax.PanicError).
func errorType(err error) string {
	for {
		switch e := err.(type) {
		case *queuemaxtype.PermanentError:
			if e.Err == nil {
				return "PermanentError"
			}
			err = e.Err
			continue
		case *queuemaxtype.RetryAfterError:
			if e.Err == nil {
				return "RetryAfterError"
			}
			err = e.Err
			continue
		}
		// The shared error types are the root package's to users (and in
		// rows written before they moved): record them under its name.
		return strings.Replace(fmt.Sprintf("%T", err), "queuemaxtype.", "queuemax.", 1)
	}
}
