package queuemaxtype

import (
	"fmt"
	"strconv"
	"time"
)

// WorkflowID identifies a stored workflow (queuemax.Client.EnqueueWorkflow). Like a JobID it packs the shard
// that holds the workflow (every step of a workflow is stored on one shard)
// with a shard-local sequence number.
type WorkflowID int64

// NewWorkflowID returns the WorkflowID of workflow seq in shard.
func NewWorkflowID(shard int, seq int64) WorkflowID {
	return WorkflowID(NewJobID(shard, seq))
}

// Shard returns the shard index that holds the workflow.
func (id WorkflowID) Shard() int { return JobID(id).Shard() }

// Seq returns the shard-local sequence number.
func (id WorkflowID) Seq() int64 { return JobID(id).Seq() }

// String returns the decimal form of id, which ParseWorkflowID accepts.
func (id WorkflowID) String() string { return strconv.FormatInt(int64(id), 10) }

// ParseWorkflowID parses the decimal form of a WorkflowID.
func ParseWorkflowID(s string) (WorkflowID, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("queuemax: invalid workflow id %q (want a positive number)", s)
	}
	return WorkflowID(n), nil
}

// StepBinding makes a top-level payload key of a step take the stored
// result of an earlier step, substituted when the step is released.
type StepBinding struct {
	Param string `json:"param"` // top-level key of the step's payload
	From  string `json:"from"`  // the step whose result it takes
}

// WorkflowStatus is the state of a stored workflow.
type WorkflowStatus string

// Workflow statuses. A workflow is running until every step has ended; it
// is then completed if every step completed, cancelled if it was cancelled
// (queuemax.Client.CancelWorkflow), and failed otherwise.
const (
	WorkflowRunning   WorkflowStatus = "running"
	WorkflowCompleted WorkflowStatus = "completed"
	WorkflowFailed    WorkflowStatus = "failed"
	WorkflowCancelled WorkflowStatus = "cancelled"
)

// StepWaiting is the status of a workflow step whose dependencies have not
// all ended yet: it has no claimable job. The other statuses of a step are
// its job's.
const StepWaiting Status = "waiting"

// WorkflowInfo is a stored workflow as queuemax.Client.Workflow returns it.
type WorkflowInfo struct {
	ID         WorkflowID     `json:"id"`
	Name       string         `json:"name"`
	Status     WorkflowStatus `json:"status"`
	CreatedAt  time.Time      `json:"created_at"`
	FinishedAt time.Time      `json:"finished_at"` // zero while running
	Steps      []WorkflowStep `json:"steps,omitempty"`
}

// WorkflowStep is one step of a stored workflow.
type WorkflowStep struct {
	Name string `json:"name"`
	Task string `json:"task"`
	// JobID is the step's job (zero while the step is waiting, if the
	// store creates the job only at release).
	JobID JobID `json:"job_id"`
	// Status is StepWaiting or the status of the step's job.
	Status       Status        `json:"status"`
	After        []string      `json:"after,omitempty"`         // steps it waits to complete
	AfterSettled []string      `json:"after_settled,omitempty"` // steps it waits to end, however they end
	Binds        []StepBinding `json:"binds,omitempty"`         // payload keys taken from other steps' results
	// Reason says why a step was cancelled without running (a dependency
	// that failed or was cancelled, or queuemax.Client.CancelWorkflow).
	Reason string `json:"reason,omitempty"`
}

// WorkflowCounts counts stored workflows by status (queuemax.Stats.Workflows).
type WorkflowCounts struct {
	Running   int64 `json:"running"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Cancelled int64 `json:"cancelled"`
}
