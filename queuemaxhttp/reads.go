package queuemaxhttp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/jsonview"
)

// The read endpoints and the JSON shapes they answer with.

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
		Shards []jsonview.Shard      `json:"shards"`
		Worker *queuemax.WorkerStats `json:"worker,omitempty"`
		Error  string                `json:"error,omitempty"` // why the snapshot is incomplete (unreadable shards)
	}{Stats: s, Shards: []jsonview.Shard{}}
	if err != nil {
		out.Error = err.Error()
	}
	for _, sh := range s.PerShard {
		out.Shards = append(out.Shards, jsonview.NewShard(sh))
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
	out := make([]jsonview.Job, 0, min(len(js), limit))
	for _, j := range js {
		if len(out) == limit {
			break
		}
		if q == "" || matchText(j, q) {
			out = append(out, jsonview.NewJob(j))
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
		jsonview.Job
		ErrorStack string `json:"error_stack,omitempty"`
	}{jsonview.NewJob(j), j.ErrorStack})
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
	out := make([]jsonview.DeadLetter, len(ds))
	for i, d := range ds {
		out[i] = jsonview.NewDeadLetter(d)
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
