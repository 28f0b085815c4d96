package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// The logic of the root package's job-step functions (queuemax.Step, Do,
// Cursor, SetCursor, SetStepTx, SetCursorTx), which forward here.

// RunStep is queuemax.Step: it runs fn as the job step name of the job
// whose handler runs with ctx, once per job (see queuemax.Step). It must be
// called by queuemax.Step itself: the place the step is named at is
// queuemax.Step's caller.
func RunStep[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
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
			return zero, queuemaxtype.Permanent(fmt.Errorf("queuemax: job step %q: its stored result does not decode into %s (reset the job's steps with Client.ResetJobSteps): %w",
				name, reflect.TypeFor[T](), err))
		}
		return v, nil
	}
	sctx := InStep(ctx, name, reflect.TypeFor[T]())
	v, err := fn(sctx)
	if err != nil {
		return v, err
	}
	if RecordedInTx(sctx) {
		return v, nil // the application's transaction recorded it (SetStepTx)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v, queuemaxtype.Permanent(fmt.Errorf("queuemax: job step %q: encode its result: %w", name, err))
	}
	return v, run.End(ctx, name, b)
}

// RunDo is queuemax.Do, called by it alone (see RunStep).
func RunDo(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("queuemax: job step %q: nil function", name)
	}
	run, _, done, err := beginStep(ctx, "Do", name)
	if err != nil || done {
		return err
	}
	sctx := InStep(ctx, name, nil)
	if err := fn(sctx); err != nil {
		return err
	}
	if RecordedInTx(sctx) {
		return nil
	}
	return run.End(ctx, name, nil)
}

// beginStep starts step name for RunStep or RunDo (what, the root
// function's name), naming the place as the root function's caller.
func beginStep(ctx context.Context, what, name string) (StepRun, json.RawMessage, bool, error) {
	run, ok := StepRunFrom(ctx)
	if !ok {
		return run, nil, false, fmt.Errorf("%w: %s(%q) needs the context a job handler runs with", queuemaxtype.ErrStepOutsideJob, what, name)
	}
	where := "an unknown place"
	// 0 beginStep, 1 RunStep or RunDo, 2 queuemax.Step or Do, 3 its caller.
	if _, file, line, ok := runtime.Caller(3); ok {
		where = filepath.Base(file) + ":" + strconv.Itoa(line)
	}
	raw, done, err := run.Begin(ctx, name, where)
	return run, raw, done, err
}

// InStepRun returns the step run and the step whose function runs with
// ctx, for the root function what.
func InStepRun(ctx context.Context, what string) (StepRun, string, reflect.Type, error) {
	run, ok := StepRunFrom(ctx)
	name, result, in := CurrentStep(ctx)
	if !ok || !in {
		return run, "", nil, fmt.Errorf("%w: %s needs the context of a Step's or Do's function", queuemaxtype.ErrStepOutsideJob, what)
	}
	return run, name, result, nil
}

// StepCursor is queuemax.Cursor.
func StepCursor[C any](ctx context.Context) (C, bool, error) {
	var zero C
	run, name, _, err := InStepRun(ctx, "Cursor")
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

// SetStepCursor is queuemax.SetCursor.
func SetStepCursor(ctx context.Context, c any) error {
	run, name, _, err := InStepRun(ctx, "SetCursor")
	if err != nil {
		return err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("queuemax: job step %q: encode its cursor: %w", name, err)
	}
	return run.SetCursor(ctx, name, b)
}

// StepTxResult checks and encodes queuemax.SetStepTx's result: the step
// run, the running step's name and result, JSON-encoded.
func StepTxResult[T any](ctx context.Context, result T) (StepRun, string, []byte, error) {
	run, name, want, err := InStepRun(ctx, "SetStepTx")
	if err != nil {
		return run, "", nil, err
	}
	if got := reflect.TypeFor[T](); want != nil && got != want {
		return run, "", nil, fmt.Errorf("queuemax: SetStepTx: step %q returns %s, got a %s", name, want, got)
	}
	b, err := json.Marshal(result)
	if err != nil {
		return run, "", nil, fmt.Errorf("queuemax: job step %q: encode its result: %w", name, err)
	}
	return run, name, b, nil
}

// StepTxCursor checks and encodes queuemax.SetCursorTx's cursor, as
// StepTxResult does a result.
func StepTxCursor(ctx context.Context, c any) (StepRun, string, []byte, error) {
	run, name, _, err := InStepRun(ctx, "SetCursorTx")
	if err != nil {
		return run, "", nil, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return run, "", nil, fmt.Errorf("queuemax: job step %q: encode its cursor: %w", name, err)
	}
	return run, name, b, nil
}
