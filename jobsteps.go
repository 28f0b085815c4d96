package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/store"
)

// Job steps: resumable parts of one handler whose results survive retries,
// deploys and kill -9 (docs/steps.md). Not workflow steps, which are jobs.

// JobStep is the recorded progress of one job step (Job.Steps): done with
// its result, or the cursor it recorded last.
type JobStep = queuemaxtype.JobStep

// Errors of job steps. Test them with errors.Is.
var (
	// ErrStepOutsideJob is returned by Step and Do called with a context
	// no job handler runs with, and by Cursor, SetCursor, SetStepTx and
	// SetCursorTx outside a step's function.
	ErrStepOutsideJob = queuemaxtype.ErrStepOutsideJob
	// ErrDuplicateStep is returned by a Step or Do whose name an earlier
	// one of the same run of the handler used; the error names both
	// places (file:line).
	ErrDuplicateStep = queuemaxtype.ErrDuplicateStep
	// ErrInvalidStepName is returned for a step name that is empty,
	// longer than 200 bytes, or holds a double quote, a backslash or a
	// control character.
	ErrInvalidStepName = queuemaxtype.ErrInvalidStepName
	// ErrJobProcessing is returned by Client.ResetJobSteps for a job a
	// worker holds.
	ErrJobProcessing = store.ErrJobProcessing
)

// Step runs fn as the job step name of the job whose handler runs with
// ctx, once per job: on the attempt where fn returns a nil error, its
// result is stored durably (on the job's row, fenced by the job's lease)
// before Step returns it; on every later attempt of the same job — a
// retry, a snooze, a restart after a crash or a deploy, a retry from the
// dead-letter queue (unless Config.RequeueClearsSteps) — Step returns the
// stored result without calling fn.
// The result goes through encoding/json both ways, as task arguments do:
// a T that encodes and decodes unchanged (exported fields, no channels or
// functions) comes back equal.
//
// An error from fn is returned as it is (so Permanent, RetryAfter and
// Snooze work from inside a step) and records nothing: the next attempt
// calls fn again. A step that was running when its process died is run
// again too, so fn should be safe to repeat or record its position with
// SetCursor. Step names are unique within a handler's run: a name used
// twice is ErrDuplicateStep naming both places; a name may be any text
// of 1 to 200 bytes without a double quote, a backslash or a control
// character (ErrInvalidStepName). With a ctx that no job handler runs
// with, Step returns ErrStepOutsideJob without calling fn.
//
// If storing the result fails (ErrLeaseLost when the job was taken back
// from this worker), Step returns that error with fn's result: the step
// ran but is not recorded, and the handler should return the error.
//
// Step is safe to call from several goroutines of one handler, with
// distinct names.
func Step[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if fn == nil {
		return zero, fmt.Errorf("queuemax: job step %q: nil function", name)
	}
	run, raw, done, err := beginStep(ctx, "Step", name)
	if err != nil {
		return zero, err
	}
	if done {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return zero, Permanent(fmt.Errorf("queuemax: job step %q: its stored result does not decode into %s (reset the job's steps with Client.ResetJobSteps): %w",
				name, reflect.TypeFor[T](), err))
		}
		return v, nil
	}
	sctx := engine.InStep(ctx, name, reflect.TypeFor[T]())
	v, err := fn(sctx)
	if err != nil {
		return v, err
	}
	if engine.RecordedInTx(sctx) {
		return v, nil // the application's transaction recorded it (SetStepTx)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v, Permanent(fmt.Errorf("queuemax: job step %q: encode its result: %w", name, err))
	}
	return v, run.End(ctx, name, b)
}

// Do is Step for a step without a result: fn runs on the attempt where it
// first returns nil and never again for the same job. See Step.
func Do(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("queuemax: job step %q: nil function", name)
	}
	run, _, done, err := beginStep(ctx, "Do", name)
	if err != nil || done {
		return err
	}
	sctx := engine.InStep(ctx, name, nil)
	if err := fn(sctx); err != nil {
		return err
	}
	if engine.RecordedInTx(sctx) {
		return nil
	}
	return run.End(ctx, name, nil)
}

// beginStep starts step name for Step or Do (what), used by their caller.
func beginStep(ctx context.Context, what, name string) (engine.StepRun, json.RawMessage, bool, error) {
	run, ok := engine.StepRunFrom(ctx)
	if !ok {
		return run, nil, false, fmt.Errorf("%w: %s(%q) needs the context a job handler runs with", ErrStepOutsideJob, what, name)
	}
	where := "an unknown place"
	if _, file, line, ok := runtime.Caller(2); ok {
		where = filepath.Base(file) + ":" + strconv.Itoa(line)
	}
	raw, done, err := run.Begin(ctx, name, where)
	return run, raw, done, err
}

// inStep returns the step run and the step whose function runs with ctx.
func inStep(ctx context.Context, what string) (engine.StepRun, string, reflect.Type, error) {
	run, ok := engine.StepRunFrom(ctx)
	name, result, in := engine.CurrentStep(ctx)
	if !ok || !in {
		return run, "", nil, fmt.Errorf("%w: %s needs the context of a Step's or Do's function", ErrStepOutsideJob, what)
	}
	return run, name, result, nil
}

// Cursor returns the cursor the running step (the Step or Do whose
// function runs with ctx) recorded last with SetCursor, on this attempt
// or an earlier one, decoded into C; false when it recorded none. Resume
// a long iteration from it:
//
//	err := queuemax.Do(ctx, "import", func(ctx context.Context) error {
//		next, _, err := queuemax.Cursor[int](ctx) // 0 at first
//		...
//		for i := next; i < len(rows); i++ {
//			...
//			if i%1000 == 999 {
//				if err := queuemax.SetCursor(ctx, i+1); err != nil { return err }
//			}
//		}
//		return nil
//	})
//
// Outside a step's function Cursor returns ErrStepOutsideJob.
func Cursor[C any](ctx context.Context) (C, bool, error) {
	var zero C
	run, name, _, err := inStep(ctx, "Cursor")
	if err != nil {
		return zero, false, err
	}
	raw, err := run.Cursor(ctx, name)
	if err != nil || raw == nil {
		return zero, false, err
	}
	var c C
	if err := json.Unmarshal(raw, &c); err != nil {
		return zero, false, fmt.Errorf("queuemax: job step %q: its cursor does not decode into %s: %w", name, reflect.TypeFor[C](), err)
	}
	return c, true, nil
}

// SetCursor records c, JSON-encoded, as the running step's position: a
// later attempt reads it back with Cursor. Each call is one small write
// fenced by the job's lease (ErrLeaseLost when the job was taken back
// from this worker); how often to call it is the handler's choice.
// Outside a step's function it returns ErrStepOutsideJob.
func SetCursor(ctx context.Context, c any) error {
	run, name, _, err := inStep(ctx, "SetCursor")
	if err != nil {
		return err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("queuemax: job step %q: encode its cursor: %w", name, err)
	}
	return run.SetCursor(ctx, name, b)
}

// SetStepTx records, inside tx (the application's own PostgreSQL
// transaction, as for EnqueueTx), that the running step completed with
// result: the step is done if and only if tx commits, together with the
// application's writes in tx. Call it in the step's function and commit
// tx before the function returns; Step then records nothing more, so a
// rolled-back tx leaves the step to run again on the next attempt:
//
//	receipt, err := queuemax.Step(ctx, "charge", func(ctx context.Context) (Receipt, error) {
//		tx, err := pool.Begin(ctx)
//		...                                  // the application's writes
//		if err := queuemax.SetStepTx(ctx, tx, r); err != nil { ... }
//		return r, tx.Commit(ctx)
//	})
//
// T must be the step's result type (an error names both otherwise); Do's
// steps pass nil (SetStepTx[any]). The job's row stays locked until tx
// ends, so commit promptly and do not record other steps of the job
// outside tx meanwhile. On the SQLite store it returns ErrTxUnsupported;
// outside a step's function, ErrStepOutsideJob.
func SetStepTx[T any](ctx context.Context, tx Tx, result T) error {
	run, name, want, err := inStep(ctx, "SetStepTx")
	if err != nil {
		return err
	}
	if got := reflect.TypeFor[T](); want != nil && got != want {
		return fmt.Errorf("queuemax: SetStepTx: step %q returns %s, got a %s", name, want, got)
	}
	b, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("queuemax: job step %q: encode its result: %w", name, err)
	}
	return stepTx(ctx, run, tx, name, true, b)
}

// SetCursorTx is SetCursor inside tx, the application's own PostgreSQL
// transaction: the cursor moves if and only if tx commits. See SetStepTx
// for the locking and the errors.
func SetCursorTx(ctx context.Context, tx Tx, c any) error {
	run, name, _, err := inStep(ctx, "SetCursorTx")
	if err != nil {
		return err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("queuemax: job step %q: encode its cursor: %w", name, err)
	}
	return stepTx(ctx, run, tx, name, false, b)
}

func stepTx(ctx context.Context, run engine.StepRun, tx Tx, name string, done bool, b []byte) error {
	if isNil(tx) {
		return fmt.Errorf("%w: the transaction is nil (%T)", ErrInvalidTx, tx)
	}
	err := run.SetTx(ctx, tx, name, done, b)
	if errors.Is(err, store.ErrProgressTxUnsupported) {
		return fmt.Errorf("%w: %w", ErrTxUnsupported, err)
	}
	return err
}

// ResetJobSteps replaces the recorded job steps of job id with steps, in
// order, as if earlier attempts had recorded them (a Done step with its
// Result as JSON, or a Cursor); nil clears them, so that the job runs
// from its first step. The job must not be running: a job a worker holds
// is ErrJobProcessing, an unknown ID ErrJobNotFound. Tests use it through
// queuemaxtest.SetStepsDone; operators to restart a job from scratch.
func (c *Client) ResetJobSteps(ctx context.Context, id JobID, steps []JobStep) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := c.checkJobID(id); err != nil {
		return err
	}
	for i, s := range steps {
		for _, raw := range []json.RawMessage{s.Result, s.Cursor} {
			if raw != nil && !json.Valid(raw) {
				return fmt.Errorf("queuemax: ResetJobSteps: step %d (%q): not valid JSON: %s", i, s.Name, raw)
			}
		}
	}
	return c.st.ResetProgress(ctx, id, steps, c.now())
}
