package queuemaxhttp

import (
	"net/http"
	"strings"

	"github.com/queuemax/queuemax"
)

// queues serves GET /queues.
func (a *admin) queues(w http.ResponseWriter, r *http.Request, _ []string) error {
	qs, err := a.c.Queues(r.Context())
	if err != nil {
		return err
	}
	if qs == nil {
		qs = []queuemax.QueueInfo{}
	}
	return reply(w, http.StatusOK, map[string]any{"queues": qs})
}

// pauseQueue serves POST /queues/{name}/pause.
func (a *admin) pauseQueue(w http.ResponseWriter, r *http.Request, args []string) error {
	return a.setQueue(w, r, args[0], true)
}

// resumeQueue serves POST /queues/{name}/resume.
func (a *admin) resumeQueue(w http.ResponseWriter, r *http.Request, args []string) error {
	return a.setQueue(w, r, args[0], false)
}

func (a *admin) setQueue(w http.ResponseWriter, r *http.Request, name string, pause bool) error {
	if err := a.noBody(r); err != nil {
		return err
	}
	if err := queuemax.CheckQueueName(name); err != nil {
		return badRequest("queue: %s", strings.TrimPrefix(err.Error(), "queuemax: "))
	}
	var err error
	if pause {
		err = a.c.Pause(r.Context(), name)
	} else {
		err = a.c.Resume(r.Context(), name)
	}
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"queue": name, "paused": pause})
}
