package queuemax

import (
	"context"
	"fmt"
)

// The typed layer of workflows, which generated code builds on: a task
// handle's Step method adds its task as a step and returns a StepRef that
// knows the task's result type, and each parameter of a step is an Input,
// either a value or the result of an earlier step of the same type. A
// parameter bound to a step of another result type does not compile:
//
//	charge := tasks.Charge.Step(wf, "charge", queuemax.Value(order)) // StepRef[Receipt]
//	tasks.Mail.Step(wf, "mail", queuemax.Value(to), queuemax.From(charge))

// NoResult is the result type of a step whose task returns only an error:
// its StepRef[NoResult] can be waited for (After) but bound to no
// parameter.
type NoResult struct{}

// StepRef is a step that a task handle's Step method added to a workflow,
// whose task returns R. Pass it to From to bind a later step's parameter of
// type R to its result, and its Name to After to make a step wait for it.
type StepRef[R any] struct{ name string }

// Name returns the step's name in its workflow.
func (s StepRef[R]) Name() string { return s.name }

// Input is a step's parameter of type T: a value (Value) or the result of
// an earlier step whose task returns T (From). The zero Input is the zero
// value of T.
type Input[T any] struct {
	v     T
	from  string
	bound bool
}

// Value returns an input that is v.
func Value[T any](v T) Input[T] { return Input[T]{v: v} }

// From returns an input that takes the stored result of step s when the
// step it is passed to is released; that step waits for s to complete, as
// with After (see Bind).
func From[T any](s StepRef[T]) Input[T] { return Input[T]{from: s.name, bound: true} }

// Into is for generated code. For a value it stores the value in *dst and
// returns nil; for an input From a step it stores the zero value (the
// placeholder the step's result replaces) and returns the Bind of the
// payload key param to that step.
func (in Input[T]) Into(dst *T, param string) StepOption {
	if !in.bound {
		*dst = in.v
		return nil
	}
	var zero T
	*dst = zero
	return Bind(param, in.from)
}

// Bind makes the step's top-level payload key param take the stored result
// of step from (the JSON its handler returned), substituted into the
// payload when the step is released. It implies After(from).
func Bind(param, from string) StepOption {
	return stepOptionFunc(func(s *workflowStep) {
		s.binds = append(s.binds, StepBinding{Param: param, From: from})
	})
}

// WorkflowResult returns the stored result of step of the stored workflow
// id, decoded into the step's result type: the typed counterpart of
// reading Result of the step's job. It returns an error wrapping
// ErrWorkflowNotFound for an unknown workflow, ErrInvalidWorkflow for a
// step the workflow lacks, ErrNoResult while the step has not completed,
// and ErrJobNotFound once its job is gone (completed-job retention).
func WorkflowResult[R any](ctx context.Context, c *Client, id WorkflowID, step StepRef[R]) (R, error) {
	var zero R
	if c == nil {
		return zero, ErrNotBound
	}
	info, err := c.Workflow(ctx, id)
	if err != nil {
		return zero, err
	}
	for _, s := range info.Steps {
		if s.Name != step.name {
			continue
		}
		if s.Status == StepWaiting || s.JobID == 0 {
			return zero, fmt.Errorf("%w: step %q of workflow %d is %s", ErrNoResult, s.Name, id, s.Status)
		}
		return Result[R](ctx, c, s.JobID)
	}
	return zero, fmt.Errorf("%w %q: no step %q in workflow %d", ErrInvalidWorkflow, info.Name, step.name, id)
}

// AddStep adds to wf a step named step that runs t's task with payload
// args, and returns it as a StepRef[R]. Generated Step methods call it with
// R the task's result type (NoResult for a task that returns only an
// error). The step's job takes t's defaults and its With overrides, under
// those of a StepOpts option, and its payload is checked as t.Enqueue checks
// it. An error (a duplicate step name, an unbound handle) is kept by wf and
// returned by Validate and Client.EnqueueWorkflow.
func AddStep[R, A any](wf *Workflow, t Task[A], step string, args A, opts ...StepOption) StepRef[R] {
	ref := StepRef[R]{name: step}
	if t.name == "" {
		if wf.err == nil {
			wf.err = fmt.Errorf("%w %q: step %q: %w (get the task handle from the generated New)", ErrInvalidWorkflow, wf.name, step, ErrNotBound)
		}
		return ref
	}
	typed := stepOptionFunc(func(s *workflowStep) {
		s.opts = t.opts.merge(s.opts)
		s.typed = &typedStep{defaults: &t.def, validate: t.check}
	})
	_ = wf.Add(step, t.name, args, append(opts[:len(opts):len(opts)], typed)...)
	return ref
}

// enqueueParams is the enqueue of step s's job: its task, payload and
// options, with a typed handle's defaults and payload check.
func (s *workflowStep) enqueueParams() EnqueueParams {
	e := EnqueueParams{Task: s.task, Payload: s.args, Opts: s.opts}
	if s.typed != nil {
		e.defaults, e.validate = s.typed.defaults, s.typed.validate
	}
	return e
}
