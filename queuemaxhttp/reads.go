package queuemaxhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

// The read endpoints and the JSON shapes they answer with.

// adminJob is a job as the admin API shows it.
type adminJob struct {
	ID          queuemax.JobID    `json:"id"`
	Shard       int               `json:"shard"`
	Task        string            `json:"task"`
	Status      queuemax.Status   `json:"status"`
	Priority    queuemax.Priority `json:"priority"`
	Payload     json.RawMessage   `json:"payload"`
	Key         *int64            `json:"key,omitempty"`
	Attempts    int               `json:"attempts"`
	MaxAttempts int               `json:"max_attempts"`
	LastError   string            `json:"last_error,omitempty"`
	ErrorType   string            `json:"error_type,omitempty"`
	WorkerID    string            `json:"worker_id,omitempty"`
	Result      json.RawMessage   `json:"result,omitempty"`
	CreatedAt   *time.Time        `json:"created_at,omitempty"`
	StartedAt   *time.Time        `json:"started_at,omitempty"`
	CompletedAt *time.Time        `json:"completed_at,omitempty"`
	NextRunAt   *time.Time        `json:"next_run_at,omitempty"`
	Heartbeat   *time.Time        `json:"heartbeat,omitempty"`
	// CancelRequested: Cancel was called while the job runs.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	Snoozes         int  `json:"snoozes"`
	// TimeoutMS is the job's own timeout (Opts.Timeout), if any.
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Queue     string   `json:"queue"`
	// UniqueKey is a unique job's key (see UniqueOpts).
	UniqueKey string `json:"unique_key,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toAdminJob(j *queuemax.Job) adminJob {
	return adminJob{ID: j.ID, Shard: j.Shard, Task: j.Task, Status: j.Status, Priority: j.Priority, Payload: j.Payload,
		Key: j.PartitionKey, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, LastError: j.LastError, ErrorType: j.ErrorType,
		WorkerID: j.WorkerID, Result: j.Result, CreatedAt: timePtr(j.CreatedAt), StartedAt: timePtr(j.StartedAt),
		CompletedAt: timePtr(j.CompletedAt), NextRunAt: timePtr(j.NextRetryAt), Heartbeat: timePtr(j.Heartbeat),
		CancelRequested: j.CancelRequested, Snoozes: j.Snoozes, TimeoutMS: j.Timeout.Milliseconds(), Tags: j.Tags, Queue: j.Queue,
		UniqueKey: j.UniqueKey}
}

type adminDeadLetter struct {
	ID            int64           `json:"id"`
	Shard         int             `json:"shard"`
	OriginalJobID queuemax.JobID  `json:"original_job_id,omitempty"`
	Task          string          `json:"task"`
	Payload       json.RawMessage `json:"payload"`
	Error         string          `json:"error"`
	ErrorType     string          `json:"error_type,omitempty"`
	Attempts      int             `json:"attempts"`
	FailedAt      *time.Time      `json:"failed_at,omitempty"`
}

type adminShard struct {
	Shard          int     `json:"shard"`
	Pending        int64   `json:"pending"`
	Scheduled      int64   `json:"scheduled"`
	Processing     int64   `json:"processing"`
	Failed         int64   `json:"failed"`
	Completed      int64   `json:"completed"`
	DeadLetters    int64   `json:"dead_letters"`
	TotalProcessed int64   `json:"total_processed"`
	TotalFailed    int64   `json:"total_failed"`
	OldestPending  *string `json:"oldest_pending,omitempty"`
	Healthy        bool    `json:"healthy"`
	LastError      string  `json:"last_error,omitempty"`
}

func (a *admin) workers(w http.ResponseWriter, r *http.Request, _ []string) error {
	ws, err := a.c.Workers(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string][]queuemax.WorkerInfo{"workers": ws})
}

func (a *admin) stats(w http.ResponseWriter, r *http.Request, _ []string) error {
	s, err := a.c.Stats(r.Context())
	if err != nil && (s.PerShard == nil || !errors.Is(err, queuemax.ErrShardUnavailable)) {
		return err
	}
	out := struct {
		queuemax.Stats
		Shards []adminShard          `json:"shards"`
		Worker *queuemax.WorkerStats `json:"worker,omitempty"`
		Error  string                `json:"error,omitempty"` // why the snapshot is incomplete (unreadable shards)
	}{Stats: s, Shards: []adminShard{}}
	if err != nil {
		out.Error = err.Error()
	}
	for _, sh := range s.PerShard {
		as := adminShard{Shard: sh.Shard, Pending: sh.Pending, Scheduled: sh.Scheduled, Processing: sh.Processing,
			Failed: sh.Failed, Completed: sh.Completed, DeadLetters: sh.DeadLetters, TotalProcessed: sh.TotalProcessed,
			TotalFailed: sh.TotalFailed, Healthy: sh.Healthy, LastError: sh.LastError}
		if !sh.OldestPending.IsZero() {
			t := sh.OldestPending.UTC().Format(time.RFC3339Nano)
			as.OldestPending = &t
		}
		out.Shards = append(out.Shards, as)
	}
	if ws, ok := a.c.WorkerStats(); ok {
		out.Worker = &ws
	}
	return reply(w, http.StatusOK, out)
}

func (a *admin) jobs(w http.ResponseWriter, r *http.Request, _ []string) error {
	p, err := a.listParams(r, true)
	if err != nil {
		return err
	}
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	if q != "" {
		p.Limit = 1000 // the text filter searches the newest 1000 matches of the other filters
	}
	js, err := a.c.Jobs(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]adminJob, 0, min(len(js), limit))
	for _, j := range js {
		if len(out) == limit {
			break
		}
		if q == "" || matchText(j, q) {
			out = append(out, toAdminJob(j))
		}
	}
	return reply(w, http.StatusOK, map[string]any{"jobs": out})
}

// jobID parses a job ID path segment; an ID whose shard does not exist
// names no job.
func (a *admin) jobID(s string) (queuemax.JobID, error) {
	id, err := queuemax.ParseJobID(s)
	if err != nil {
		return 0, badRequest("job id %q: want a number or shard:seq", s)
	}
	if id.Shard() >= a.c.Shards() {
		return 0, &httpError{http.StatusNotFound, fmt.Sprintf("no job %s", s)}
	}
	return id, nil
}

func (a *admin) job(w http.ResponseWriter, r *http.Request, args []string) error {
	id, err := a.jobID(args[0])
	if err != nil {
		return err
	}
	j, err := a.c.Job(r.Context(), id)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, struct {
		adminJob
		ErrorStack string          `json:"error_stack,omitempty"`
		Metadata   json.RawMessage `json:"metadata,omitempty"`
	}{toAdminJob(j), j.ErrorStack, j.Metadata})
}

func (a *admin) deadLetters(w http.ResponseWriter, r *http.Request, _ []string) error {
	p, err := a.listParams(r, false)
	if err != nil {
		return err
	}
	ds, err := a.c.DeadLetters(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]adminDeadLetter, len(ds))
	for i, d := range ds {
		out[i] = adminDeadLetter{ID: d.ID, Shard: d.Shard, OriginalJobID: d.OriginalJobID, Task: d.Task, Payload: d.Payload,
			Error: d.Error, ErrorType: d.ErrorType, Attempts: d.Attempts, FailedAt: timePtr(d.FailedAt)}
	}
	return reply(w, http.StatusOK, map[string]any{"dead_letters": out})
}

func (a *admin) periodic(w http.ResponseWriter, r *http.Request, _ []string) error {
	ps, err := a.c.PeriodicTasks(r.Context())
	if err != nil {
		return err
	}
	if ps == nil {
		ps = []queuemax.PeriodicInfo{}
	}
	return reply(w, http.StatusOK, map[string]any{"periodic": ps})
}
