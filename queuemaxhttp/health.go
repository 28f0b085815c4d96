package queuemaxhttp

import (
	"net/http"

	"github.com/queuemax/queuemax"
)

// The probe endpoints: /health (the whole verdict), /readyz and /livez
// (Kubernetes probes). /readyz and /livez need no token even with
// Options.ProtectReads, since probes carry none; they reveal no data.

// health answers Client.Health: 200 for ok and degraded (an open breaker
// is one task's dependency, not an outage of the queue), 503 for unhealthy.
func (a *admin) health(w http.ResponseWriter, r *http.Request, _ []string) error {
	h, err := a.c.Health(r.Context())
	if err != nil && h.Status == "" {
		return err
	}
	status := http.StatusOK
	if h.Status == queuemax.HealthUnhealthy {
		status = http.StatusServiceUnavailable
	}
	return reply(w, status, h)
}

// readyz answers Client.Ready: 200 {"status": "ready"} when the store
// answers and this process's workers are not draining, 503 with the
// reason otherwise.
func (a *admin) readyz(w http.ResponseWriter, r *http.Request, _ []string) error {
	if err := a.c.Ready(r.Context()); err != nil {
		return reply(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "error": err.Error()})
	}
	return reply(w, http.StatusOK, map[string]string{"status": "ready"})
}

// livez answers 200 {"status": "alive"} while the process serves HTTP. It
// checks no dependency on purpose: a liveness probe that fails when the
// database is down would restart every pod during the database's outage.
func (a *admin) livez(w http.ResponseWriter, _ *http.Request, _ []string) error {
	return reply(w, http.StatusOK, map[string]string{"status": "alive"})
}
