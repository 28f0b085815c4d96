package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Workflows: steps (jobs) that wait for each other. A store that supports
// them implements WorkflowStore; every step of one workflow lives on one
// shard, so that the transaction that records a step's end also releases
// (or cancels) the steps that wait for it.

// ErrWorkflowNotFound is returned for a workflow ID that names no stored
// workflow.
var ErrWorkflowNotFound = errors.New("queuemax: workflow not found")

// Workflow statuses as stored.
const (
	WorkflowRunning   = "running"
	WorkflowCompleted = "completed"
	WorkflowFailed    = "failed"
	WorkflowCancelled = "cancelled"
)

// Step states as stored: waiting (dependencies not all ended), ready (its
// job was released or never waited), or the status its job ended with.
const (
	StepWaiting = "waiting"
	StepReady   = "ready"
)

// WorkflowStore is the workflow part of Store.
type WorkflowStore interface {
	// InsertWorkflow stores a workflow and every step's job in one
	// transaction on p.Shard, and returns the workflow's ID (packed like
	// a JobID, NewJobID(shard, seq)) and each step's job ID in step
	// order. A step without dependencies is claimable at once; the
	// others wait, unclaimable, until their dependencies end.
	InsertWorkflow(ctx context.Context, p *WorkflowParams) (int64, []JobID, error)
	// Workflow returns one workflow with its steps in the order added,
	// or ErrWorkflowNotFound.
	Workflow(ctx context.Context, id int64) (*WorkflowRecord, error)
	// Workflows lists workflows, newest first, without their steps.
	Workflows(ctx context.Context, p WorkflowFilter) ([]*WorkflowRecord, error)
	// CancelWorkflow cancels every step not ended: waiting and ready
	// ones at once, running ones through a cancel request (as Cancel).
	// It returns ErrWorkflowNotFound for an unknown ID and changes
	// nothing for a workflow already finished. finished is true when the
	// call ended the workflow (it had no running step).
	CancelWorkflow(ctx context.Context, id int64, now time.Time) (finished bool, err error)
	// StepResult returns the stored result of step of the workflow that
	// job belongs to (see StepOutput).
	StepResult(ctx context.Context, job JobID, step string) (StepOutput, error)
	// FinishedBy returns the workflows whose last step to end was one of
	// jobs (each workflow records the job whose end finished it). Only
	// the writer that committed that job's end asks with it, so each
	// finished workflow is reported once, to emit its event. It only
	// reads.
	FinishedBy(ctx context.Context, jobs []JobID) ([]*WorkflowRecord, error)
	// WorkflowCounts counts the stored workflows by status.
	WorkflowCounts(ctx context.Context) (map[string]int64, error)
	// RetryWorkflow reopens a failed or cancelled workflow (see
	// workflow_retry.go): it returns how many steps run again.
	RetryWorkflow(ctx context.Context, id int64, now time.Time) (int, error)
	// ClaimWorkflowEnds claims ended workflows whose end no process has
	// announced yet (see workflow_retry.go).
	ClaimWorkflowEnds(ctx context.Context, p ClaimEndsParams) ([]*WorkflowRecord, error)
}

// WorkflowParams is a workflow to insert. Steps' jobs must all have Shard
// equal to Shard and no Unique.
type WorkflowParams struct {
	Shard int
	Name  string
	Steps []WorkflowStepParams
	Now   time.Time
}

// WorkflowStepParams is one step to insert. After, Settled and the Binds'
// From name other steps of the workflow; the caller has checked them
// (known names, no cycle).
type WorkflowStepParams struct {
	Name    string
	Job     InsertParams
	After   []string // steps that must complete
	Settled []string // steps that must end, however
	Binds   []WorkflowBind
}

// WorkflowBind makes payload key Param take step From's result.
type WorkflowBind struct {
	Param string `json:"param"`
	From  string `json:"from"`
}

// WorkflowFilter selects workflows to list. Zero fields do not filter.
type WorkflowFilter struct {
	Status string
	Name   string
	Limit  int   // 0 means 100
	Before int64 // only workflows with a smaller ID (per shard: smaller sequence)
}

// MaxRows returns the listing's row limit (100 when Limit is not
// positive).
func (p WorkflowFilter) MaxRows() int {
	if p.Limit <= 0 {
		return 100
	}
	return p.Limit
}

// WorkflowRecord is a stored workflow.
type WorkflowRecord struct {
	ID         int64
	Name       string
	Status     string
	CreatedAt  time.Time
	FinishedAt time.Time
	Steps      []WorkflowStepRecord // nil in listings
}

// WorkflowStepRecord is one stored step.
type WorkflowStepRecord struct {
	Name    string
	Task    string
	JobID   JobID
	State   string // StepWaiting, StepReady, or the status it ended with
	Job     Status // the job's current status ("" if its row is gone)
	After   []string
	Settled []string
	Binds   []WorkflowBind
	Reason  string
}

// StepOutput is what StepResult returns.
type StepOutput struct {
	// InWorkflow is false when job is not a workflow step (the other
	// fields are then empty).
	InWorkflow bool
	// Known is false when the workflow has no step of that name.
	Known bool
	// State is the step's state; Result its stored result (nil if it
	// returned none, or has not completed).
	State  string
	Result json.RawMessage
}

// WorkflowStepRow is one step row as the stores write it (through a JSON
// array their insert statement unpacks).
type WorkflowStepRow struct {
	Job     int64          `json:"j"`
	Pos     int            `json:"p"`
	Name    string         `json:"n"`
	Task    string         `json:"t"`
	After   []string       `json:"a"`
	Settled []string       `json:"s"`
	Binds   []WorkflowBind `json:"b"`
	Waits   int            `json:"w"`
	RunAt   string         `json:"r"` // the run-at time (TimeLayout) of a waiting step, "" for none
}

// WorkflowRows resolves the steps' dependencies to their jobs' row ids
// (ids[i] is step i's job): the step rows, the (dependency, dependent,
// settled 0/1) edges, the (dependency, dependent, key) bindings and the
// ids of the steps that wait.
func WorkflowRows(p *WorkflowParams, ids []JobID) (steps []WorkflowStepRow, edges [][3]any, binds [][3]any, waiting []int64) {
	byName := make(map[string]int64, len(p.Steps))
	for i, st := range p.Steps {
		byName[st.Name] = ids[i].Seq()
	}
	steps = make([]WorkflowStepRow, len(p.Steps))
	for i, st := range p.Steps {
		deps := StepDeps(st)
		job := ids[i].Seq()
		for _, d := range deps {
			settled := 0
			if d.Settled {
				settled = 1
			}
			edges = append(edges, [3]any{byName[d.Name], job, settled})
		}
		for _, b := range st.Binds {
			binds = append(binds, [3]any{byName[b.From], job, b.Param})
		}
		row := WorkflowStepRow{Job: job, Pos: i, Name: st.Name, Task: st.Job.Task, After: st.After, Settled: st.Settled,
			Binds: st.Binds, Waits: len(deps)}
		if len(deps) > 0 {
			waiting = append(waiting, job)
			if st.Job.RunAt.After(st.Job.Now) {
				row.RunAt = FormatTime(st.Job.RunAt)
			}
		}
		steps[i] = row
	}
	return steps, edges, binds, waiting
}

// StepDep is one dependency of a step: Settled when the step runs however
// it ends (named only by AfterSettled).
type StepDep struct {
	Name    string
	Settled bool
}

// StepDeps returns each step st waits for once: After and Bind names are
// hard dependencies, AfterSettled names not also among them settled ones.
func StepDeps(st WorkflowStepParams) []StepDep {
	var out []StepDep
	seen := map[string]int{}
	add := func(n string, settled bool) {
		if k, ok := seen[n]; ok {
			if !settled {
				out[k].Settled = false
			}
			return
		}
		seen[n] = len(out)
		out = append(out, StepDep{Name: n, Settled: settled})
	}
	for _, n := range st.After {
		add(n, false)
	}
	for _, b := range st.Binds {
		add(b.From, false)
	}
	for _, n := range st.Settled {
		add(n, true)
	}
	return out
}
