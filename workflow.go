package queuemax

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// ErrInvalidWorkflow is wrapped by the errors of Workflow.Add and
// Client.EnqueueWorkflow for a workflow that cannot be stored: an empty or
// duplicate step name, a dependency on an unknown step, or a cycle. The
// error names the steps.
var ErrInvalidWorkflow = enqueue.ErrInvalidWorkflow

// ErrWorkflowNotFound is returned when a WorkflowID names no stored
// workflow.
var ErrWorkflowNotFound = errors.New("queuemax: workflow not found")

// WorkflowID identifies a stored workflow: like a JobID it packs the
// shard that holds the workflow with a shard-local sequence number; see
// queuemaxtype.WorkflowID for its methods (Shard, Seq, String).
type WorkflowID = queuemaxtype.WorkflowID

// NewWorkflowID returns the WorkflowID of workflow seq in shard.
func NewWorkflowID(shard int, seq int64) WorkflowID { return queuemaxtype.NewWorkflowID(shard, seq) }

// ParseWorkflowID parses the decimal form of a WorkflowID.
func ParseWorkflowID(s string) (WorkflowID, error) { return queuemaxtype.ParseWorkflowID(s) }

// WorkflowListParams selects workflows for Client.Workflows. The zero
// value lists the newest 100 of every status.
type WorkflowListParams struct {
	Status WorkflowStatus // "" for every status
	Name   string         // "" for every name
	Limit  int            // 0 means 100
	// Before, when not zero, lists only workflows older than this one
	// (for paging, newest first).
	Before WorkflowID
}

// Workflow is a set of steps (jobs) that wait for each other: a step added
// with After runs only once every step it names has completed. Build one
// with NewWorkflow and Add, then store every step at once with
// Client.EnqueueWorkflow. A Workflow is not safe for concurrent use.
type Workflow struct {
	name  string
	steps []*workflowStep
	index map[string]int
	err   error // the first error of Add, reported again by Validate
}

// workflowStep is one step as added, before it is stored.
type workflowStep struct {
	name, task string
	args       any
	after      []string
	settled    []string // the dependencies named by AfterSettled
	binds      []StepBinding
	opts       Opts
	typed      *typedStep // a typed handle's defaults and payload check (AddStep)
}

// StepBinding makes a top-level payload key of a step take the stored
// result of an earlier step; see queuemaxtype.StepBinding for its fields.
type StepBinding = queuemaxtype.StepBinding

// StepOption configures one step of a workflow (After, AfterSettled,
// Bind, StepOpts).
type StepOption interface{ applyStep(*workflowStep) }

type stepOptionFunc func(*workflowStep)

func (f stepOptionFunc) applyStep(s *workflowStep) { f(s) }

// After makes a step wait until every named step has completed. If one of
// them ends failed (dead-lettered) or cancelled, the step is cancelled
// with that reason and never runs.
func After(steps ...string) StepOption {
	steps = slices.Clone(steps)
	return stepOptionFunc(func(s *workflowStep) { s.after = append(s.after, steps...) })
}

// AfterSettled makes a step wait until every named step has ended, however
// it ended (completed, failed or cancelled): the step runs in every case.
func AfterSettled(steps ...string) StepOption {
	steps = slices.Clone(steps)
	return stepOptionFunc(func(s *workflowStep) { s.settled = append(s.settled, steps...) })
}

// StepOpts sets the enqueue options of a step's job (priority, queue, run
// at, ...), as Opts does for Client.Enqueue.
func StepOpts(o Opts) StepOption {
	return stepOptionFunc(func(s *workflowStep) { s.opts = o })
}

// NewWorkflow returns an empty workflow with a name for listings (the name
// need not be unique).
func NewWorkflow(name string) *Workflow {
	return &Workflow{name: name, index: map[string]int{}}
}

// Name returns the workflow's name.
func (w *Workflow) Name() string { return w.name }

// Len returns the number of steps added.
func (w *Workflow) Len() int { return len(w.steps) }

// Steps returns the step names in the order they were added.
func (w *Workflow) Steps() []string {
	names := make([]string, len(w.steps))
	for i, s := range w.steps {
		names[i] = s.name
	}
	return names
}

// Add adds a step named step that runs task with args (a payload, as for
// Client.Enqueue). Dependencies may name steps added later; Validate (and
// EnqueueWorkflow) checks they exist and form no cycle. Add reports an
// empty or duplicate step name, or a step that depends on itself, at once;
// the error wraps ErrInvalidWorkflow, and the workflow keeps it, so
// EnqueueWorkflow refuses the workflow even if the error was ignored.
func (w *Workflow) Add(step, task string, args any, opts ...StepOption) error {
	s := &workflowStep{name: step, task: task, args: args}
	for _, o := range opts {
		if o != nil {
			o.applyStep(s)
		}
	}
	err := w.checkStep(s)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return err
	}
	w.index[step] = len(w.steps)
	w.steps = append(w.steps, s)
	return nil
}

func (w *Workflow) checkStep(s *workflowStep) error {
	_, added := w.index[s.name]
	binds := make([]store.WorkflowBind, len(s.binds))
	for i, b := range s.binds {
		binds[i] = store.WorkflowBind(b)
	}
	return enqueue.CheckStepAdd(w.name, s.name, s.task, added, s.deps(), binds)
}

// deps returns every step s waits for (After, AfterSettled and Bind),
// each once, in the order first named.
func (s *workflowStep) deps() []string {
	from := make([]string, len(s.binds))
	for i, b := range s.binds {
		from[i] = b.From
	}
	return enqueue.Deps(s.after, s.settled, from)
}

// Validate reports the first problem of the workflow: an error Add
// returned, no steps, a dependency on an unknown step, or a cycle (named
// step by step). The error wraps ErrInvalidWorkflow.
func (w *Workflow) Validate() error {
	if w.err != nil {
		return w.err
	}
	names, deps := make([]string, len(w.steps)), make([][]string, len(w.steps))
	for i, s := range w.steps {
		names[i], deps[i] = s.name, s.deps()
	}
	return enqueue.CheckGraph(w.name, names, deps)
}

// The stored workflow as Client.Workflow and Workflows return it; the
// types are defined, with their full documentation, in package
// queuemaxtype.
type (
	// WorkflowStatus is the state of a stored workflow; see
	// queuemaxtype.WorkflowStatus.
	WorkflowStatus = queuemaxtype.WorkflowStatus
	// WorkflowInfo is a stored workflow; see queuemaxtype.WorkflowInfo for
	// its fields.
	WorkflowInfo = queuemaxtype.WorkflowInfo
	// WorkflowStep is one step of a stored workflow; see
	// queuemaxtype.WorkflowStep for its fields.
	WorkflowStep = queuemaxtype.WorkflowStep
)

// Workflow statuses; see queuemaxtype.WorkflowRunning and the others.
const (
	WorkflowRunning   = queuemaxtype.WorkflowRunning
	WorkflowCompleted = queuemaxtype.WorkflowCompleted
	WorkflowFailed    = queuemaxtype.WorkflowFailed
	WorkflowCancelled = queuemaxtype.WorkflowCancelled
)

// StepWaiting is the status of a workflow step whose dependencies have not
// all ended yet: it has no claimable job. The other statuses of a step are
// its job's.
const StepWaiting = queuemaxtype.StepWaiting

// typedStep is what a typed handle adds to a step: its task's defaults and
// payload check, as EnqueueParams carries them for Task.Enqueue.
type typedStep struct {
	defaults *TaskOptions
	validate func(json.RawMessage) error
}
