package queuemax

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuemax/queuemax/runtime/store"
)

// ErrWorkflowNotRetryable is returned by RetryWorkflow for a workflow that
// is running or completed, or one whose failed step's job is no longer
// stored.
var ErrWorkflowNotRetryable = store.ErrWorkflowNotRetryable

// RetryWorkflow reopens a failed or cancelled workflow: every step that
// did not complete runs again with a fresh attempt budget — the steps that
// failed or were cancelled directly at once (or when a step they depend on
// has run again), the steps their end cancelled when their dependencies
// complete — while completed steps keep their results and do not run
// again; bound keys take the new results. The workflow is running again,
// and its end is announced again (workflow_completed or workflow_failed).
// It returns how many steps will run again. Errors: an unknown ID
// (ErrWorkflowNotFound), a running or completed workflow, or a step whose
// job is no longer stored (ErrWorkflowNotRetryable).
//
// Re-queueing one failed step's job (RetryJob, RetryFailed, RequeueDead)
// reopens that step's branch the same way.
func (c *Client) RetryWorkflow(ctx context.Context, id WorkflowID) (int, error) {
	ws, err := c.workflowStore()
	if err != nil {
		return 0, err
	}
	n, err := ws.RetryWorkflow(ctx, int64(id), c.now())
	if errors.Is(err, store.ErrWorkflowNotFound) {
		return 0, fmt.Errorf("%w: %d", ErrWorkflowNotFound, id)
	}
	if err != nil {
		return 0, err
	}
	c.notify()
	return n, nil
}
