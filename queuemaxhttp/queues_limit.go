package queuemaxhttp

import (
	"net/http"
	"strings"

	"github.com/queuemax/queuemax"
)

// queueLimits serves POST /queues/{name}/limits: the body is the queue's
// new limits, {"rate": 50, "per": "1s", "concurrency": 4} (a field left
// out is zero: {} clears them).
func (a *admin) queueLimits(w http.ResponseWriter, r *http.Request, args []string) error {
	name := args[0]
	if err := queuemax.CheckQueueName(name); err != nil {
		return badRequest("queue: %s", strings.TrimPrefix(err.Error(), "queuemax: "))
	}
	var l queuemax.QueueLimits
	if err := a.decode(w, r, &l); err != nil {
		return err
	}
	if err := a.c.SetQueueLimits(r.Context(), name, l); err != nil {
		return err
	}
	return reply(w, http.StatusOK, map[string]any{"queue": name, "limits": l})
}
