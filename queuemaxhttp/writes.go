package queuemaxhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/queuemax/queuemax"
)

// The endpoints that change the queue; each needs the admin token.

// noBody rejects a body on endpoints that take none.
func (a *admin) noBody(r *http.Request) error {
	if r.ContentLength > 0 {
		return badRequest("this endpoint takes no request body")
	}
	return nil
}

func (a *admin) retryAll(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	for name := range r.URL.Query() {
		if name != "shard" {
			return badRequest("unknown query parameter %q", name)
		}
	}
	sh, ok, err := queryInt(r, "shard", 0, a.c.Shards()-1)
	if err != nil {
		return err
	}
	if !ok {
		sh = -1
	}
	n, err := a.c.RetryFailed(r.Context(), sh)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]int{"retried": n})
}

func (a *admin) retryJob(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	id, err := a.jobID(args[0])
	if err != nil {
		return err
	}
	if err := a.c.RetryJob(r.Context(), id); err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"retried": 1, "job_id": id})
}

func (a *admin) cancelJob(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	id, err := a.jobID(args[0])
	if err != nil {
		return err
	}
	st, err := a.c.Cancel(r.Context(), id)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"job_id": id, "status": st})
}

func (a *admin) requeue(w http.ResponseWriter, r *http.Request, args []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	sh, err := strconv.Atoi(args[0])
	if err != nil || sh < 0 {
		return badRequest("shard %q: want a non-negative integer", args[0])
	}
	if sh >= a.c.Shards() {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no shard %d (shards: 0–%d)", sh, a.c.Shards()-1)}
	}
	dlq, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || dlq < 1 {
		return badRequest("dead letter id %q: want a positive integer", args[1])
	}
	id, err := a.c.RequeueDead(r.Context(), sh, dlq)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"job_id": id})
}

func (a *admin) purge(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req struct {
		Statuses []string `json:"statuses"`
	}
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Statuses) == 0 {
		return badRequest(`field "statuses": required, list the statuses to purge (e.g. ["failed", "completed"])`)
	}
	sts := make([]queuemax.Status, len(req.Statuses))
	for i, s := range req.Statuses {
		st, err := queuemax.ParseStatus(s)
		if err != nil {
			return badRequest("field \"statuses\"[%d]: %v", i, err)
		}
		sts[i] = st
	}
	n, err := a.c.Purge(r.Context(), sts...)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]int{"purged": n})
}

func (a *admin) recover(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	res, err := a.c.RecoverOrphans(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]int{"requeued": res.Requeued, "dead_lettered": res.DeadLettered})
}

// enqueueRequest is the body of POST /enqueue.
type enqueueRequest struct {
	Task    string          `json:"task"`
	Payload json.RawMessage `json:"payload"`
	Opts    struct {
		Priority   *queuemax.Priority `json:"priority"`
		MaxRetries *int               `json:"max_retries"`
		Key        *int64             `json:"key"`
		RunAt      time.Time          `json:"run_at"`
		Delay      string             `json:"delay"`
		Timeout    string             `json:"timeout"`
		Tags       []string           `json:"tags"`
		Metadata   map[string]any     `json:"metadata"`
		Queue      string             `json:"queue"`
		UniqueKey  string             `json:"unique_key"`
		// AllowUnknownTask stores a task name that neither the client's
		// handlers nor the store's task catalogue know (Opts.AllowUnknownTask).
		AllowUnknownTask bool `json:"allow_unknown_task"`
	} `json:"opts"`
}

func (a *admin) enqueue(w http.ResponseWriter, r *http.Request, _ []string) error {
	var req enqueueRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	if req.Task == "" {
		return badRequest(`field "task": required`)
	}
	payload := req.Payload
	if len(payload) == 0 || string(payload) == "null" {
		payload = json.RawMessage("{}")
	}
	if payload[0] != '{' {
		return badRequest(`field "payload": want a JSON object`)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return badRequest(`field "payload": %v`, err)
	}
	payload = compact.Bytes()
	o := queuemax.Opts{Priority: req.Opts.Priority, MaxRetries: req.Opts.MaxRetries, Key: req.Opts.Key, RunAt: req.Opts.RunAt,
		Tags: req.Opts.Tags, Metadata: req.Opts.Metadata, Queue: req.Opts.Queue,
		UniqueKey: req.Opts.UniqueKey, AllowUnknownTask: req.Opts.AllowUnknownTask}
	if req.Opts.Timeout != "" {
		d, err := time.ParseDuration(req.Opts.Timeout)
		if err != nil || d < 0 {
			return badRequest(`field "opts.timeout": want a non-negative Go duration such as "30s", got %q`, req.Opts.Timeout)
		}
		o.Timeout = d
	}
	if o.Priority != nil && !o.Priority.Valid() {
		return badRequest(`field "opts.priority": want 0, 1 or 2, got %d`, *o.Priority)
	}
	if o.MaxRetries != nil && *o.MaxRetries < 0 {
		return badRequest(`field "opts.max_retries": want 0 or more, got %d`, *o.MaxRetries)
	}
	if req.Opts.Delay != "" {
		if !o.RunAt.IsZero() {
			return badRequest(`fields "opts.delay" and "opts.run_at": set at most one`)
		}
		d, err := time.ParseDuration(req.Opts.Delay)
		if err != nil || d < 0 {
			return badRequest(`field "opts.delay": want a non-negative Go duration such as "90s", got %q`, req.Opts.Delay)
		}
		o.RunAt = time.Now().Add(d)
	}
	// The name as stored: resolved as the enqueue resolves it (a short
	// name, an alias, a task of the store's task catalogue).
	task, err := a.c.ResolveTaskName(r.Context(), req.Task)
	if err != nil {
		if !o.AllowUnknownTask {
			return err
		}
		task = req.Task
	}
	res, err := a.c.EnqueueResult(r.Context(), task, payload, o)
	if err != nil {
		return err
	}
	id := res.ID
	if res.Duplicate {
		return reply(w, http.StatusOK, map[string]any{"job_id": id, "shard": id.Shard(), "task": task, "duplicate": true})
	}
	return reply(w, http.StatusCreated, map[string]any{"job_id": id, "shard": id.Shard(), "task": task})
}
