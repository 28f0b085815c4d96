package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/enqueue"
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
	return engine.RunStep(ctx, name, fn)
}

// Do is Step for a step without a result: fn runs on the attempt where it
// first returns nil and never again for the same job. See Step.
func Do(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	return engine.RunDo(ctx, name, fn)
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
	return engine.StepCursor[C](ctx)
}

// SetCursor records c, JSON-encoded, as the running step's position: a
// later attempt reads it back with Cursor. Each call is one small write
// fenced by the job's lease (ErrLeaseLost when the job was taken back
// from this worker); how often to call it is the handler's choice.
// Outside a step's function it returns ErrStepOutsideJob.
func SetCursor(ctx context.Context, c any) error {
	return engine.SetStepCursor(ctx, c)
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
	run, name, b, err := engine.StepTxResult(ctx, result)
	if err != nil {
		return err
	}
	return stepTx(ctx, run, tx, name, true, b)
}

// SetCursorTx is SetCursor inside tx, the application's own PostgreSQL
// transaction: the cursor moves if and only if tx commits. See SetStepTx
// for the locking and the errors.
func SetCursorTx(ctx context.Context, tx Tx, c any) error {
	run, name, b, err := engine.StepTxCursor(ctx, c)
	if err != nil {
		return err
	}
	return stepTx(ctx, run, tx, name, false, b)
}

func stepTx(ctx context.Context, run engine.StepRun, tx Tx, name string, done bool, b []byte) error {
	if enqueue.IsNil(tx) {
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
