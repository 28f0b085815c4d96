package queuemaxhttp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/queuemax/queuemax"
)

// The workflow endpoints: GET /workflows, GET /workflows/{id},
// POST /workflows/{id}/cancel and POST /workflows/{id}/retry.

// workflowView is a workflow as JSON; Steps is omitted in listings.
type workflowView struct {
	ID         queuemax.WorkflowID     `json:"id"`
	Shard      int                     `json:"shard"`
	Name       string                  `json:"name"`
	Status     queuemax.WorkflowStatus `json:"status"`
	CreatedAt  *time.Time              `json:"created_at,omitempty"`
	FinishedAt *time.Time              `json:"finished_at,omitempty"`
	Steps      []stepView              `json:"steps,omitempty"`
}

// stepView is one step of a workflow as JSON.
type stepView struct {
	Name         string            `json:"name"`
	Task         string            `json:"task"`
	JobID        queuemax.JobID    `json:"job_id,omitempty"`
	Status       queuemax.Status   `json:"status"`
	After        []string          `json:"after"`
	AfterSettled []string          `json:"after_settled"`
	Binds        []stepBindingView `json:"binds"`
	Reason       string            `json:"reason,omitempty"`
}

type stepBindingView struct {
	Param string `json:"param"`
	From  string `json:"from"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func newWorkflowView(w *queuemax.WorkflowInfo, withSteps bool) workflowView {
	v := workflowView{ID: w.ID, Shard: w.ID.Shard(), Name: w.Name, Status: w.Status,
		CreatedAt: timePtr(w.CreatedAt), FinishedAt: timePtr(w.FinishedAt)}
	if !withSteps {
		return v
	}
	v.Steps = make([]stepView, len(w.Steps))
	for i, s := range w.Steps {
		sv := stepView{Name: s.Name, Task: s.Task, JobID: s.JobID, Status: s.Status, Reason: s.Reason,
			After: nonNil(s.After), AfterSettled: nonNil(s.AfterSettled), Binds: []stepBindingView{}}
		for _, b := range s.Binds {
			sv.Binds = append(sv.Binds, stepBindingView{Param: b.Param, From: b.From})
		}
		v.Steps[i] = sv
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// workflowStatuses are the values GET /workflows takes for status.
var workflowStatuses = []queuemax.WorkflowStatus{queuemax.WorkflowRunning, queuemax.WorkflowCompleted, queuemax.WorkflowFailed, queuemax.WorkflowCancelled}

// workflows serves GET /workflows?status=&name=&limit=&before=: the newest
// workflows first, without their steps, and "next_before" (the ID to pass
// as before for the next page) when the page is full.
func (a *admin) workflows(w http.ResponseWriter, r *http.Request, _ []string) error {
	var p queuemax.WorkflowListParams
	q := r.URL.Query()
	for name := range q {
		switch name {
		case "status", "name", "limit", "before":
		default:
			return badRequest("unknown query parameter %q", name)
		}
	}
	if s := q.Get("status"); s != "" {
		p.Status = queuemax.WorkflowStatus(s)
		known := false
		for _, st := range workflowStatuses {
			known = known || st == p.Status
		}
		if !known {
			return badRequest("query parameter status: unknown workflow status %q (want running, completed, failed or cancelled)", s)
		}
	}
	p.Name = q.Get("name")
	limit, ok, err := queryInt(r, "limit", 1, 1000)
	if err != nil {
		return err
	}
	if !ok {
		limit = 100
	}
	p.Limit = limit
	if s := q.Get("before"); s != "" {
		id, err := queuemax.ParseWorkflowID(s)
		if err != nil {
			return badRequest("query parameter before: want a workflow id, got %q", s)
		}
		p.Before = id
	}
	list, err := a.c.Workflows(r.Context(), p)
	if err != nil {
		return err
	}
	out := struct {
		Workflows  []workflowView       `json:"workflows"`
		NextBefore *queuemax.WorkflowID `json:"next_before,omitempty"`
	}{Workflows: make([]workflowView, len(list))}
	for i, wf := range list {
		out.Workflows[i] = newWorkflowView(wf, false)
	}
	if len(list) == limit {
		next := list[len(list)-1].ID
		out.NextBefore = &next
	}
	return reply(w, http.StatusOK, out)
}

// workflowID parses a workflow ID path segment; an ID whose shard does not
// exist names no workflow.
func (a *admin) workflowID(s string) (queuemax.WorkflowID, error) {
	id, err := queuemax.ParseWorkflowID(s)
	if err != nil {
		return 0, badRequest("workflow id %q: want a positive number", s)
	}
	if id.Shard() >= a.c.Shards() {
		return 0, &httpError{http.StatusNotFound, fmt.Sprintf("no workflow %s", s)}
	}
	return id, nil
}

// workflow serves GET /workflows/{id}: the workflow with its steps in the
// order added, each with its status, dependencies, job and reason.
func (a *admin) workflow(w http.ResponseWriter, r *http.Request, args []string) error {
	id, err := a.workflowID(args[0])
	if err != nil {
		return err
	}
	info, err := a.c.Workflow(r.Context(), id)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, newWorkflowView(info, true))
}

// cancelWorkflow serves POST /workflows/{id}/cancel: every step not ended
// is cancelled (running ones through their context). It answers the
// workflow as GET does, and 409 for a workflow that already finished.
func (a *admin) cancelWorkflow(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	id, err := a.workflowID(args[0])
	if err != nil {
		return err
	}
	info, err := a.c.Workflow(r.Context(), id)
	if err != nil {
		return err
	}
	if info.Status != queuemax.WorkflowRunning {
		return &httpError{http.StatusConflict, fmt.Sprintf("workflow %d already %s", id, info.Status)}
	}
	if err := a.c.CancelWorkflow(r.Context(), id); err != nil {
		return err
	}
	if info, err = a.c.Workflow(r.Context(), id); err != nil {
		return err
	}
	return reply(w, http.StatusOK, newWorkflowView(info, true))
}

// retryWorkflow serves POST /workflows/{id}/retry: a failed or cancelled
// workflow runs its steps that did not complete again (completed ones keep
// their results). It answers the workflow as GET does, and 409 for a
// workflow that is running or completed.
func (a *admin) retryWorkflow(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	id, err := a.workflowID(args[0])
	if err != nil {
		return err
	}
	_, err = a.c.RetryWorkflow(r.Context(), id)
	if errors.Is(err, queuemax.ErrWorkflowNotRetryable) {
		return &httpError{http.StatusConflict, err.Error()}
	}
	if err != nil {
		return err
	}
	info, err := a.c.Workflow(r.Context(), id)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, newWorkflowView(info, true))
}
