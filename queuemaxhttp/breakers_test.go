package queuemaxhttp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// TestAdminHandler_Breakers: the admin API shows the stored breaker (in
// /breakers and the task row) and why a job it holds waits.
func TestAdminHandler_Breakers(t *testing.T) {
	t.Parallel()
	h := queuemax.Define("shop.Charge", queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0)}, func(context.Context, struct{}) error {
		return queuemax.Unavailable(errors.New("payments API: 503"))
	})
	b := setup(t, queuemax.Config{Shards: 1, Handlers: []queuemax.Handler{h}, CircuitThreshold: 1, CircuitTimeout: time.Hour})
	failed, _ := b.c.Subscribe(queuemax.EventFailed)
	run(t, b.c)
	if _, err := b.c.Enqueue(b.ctx, "shop.Charge", struct{}{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(30 * time.Second):
		t.Fatal("the failing job did not fail")
	}
	id, err := b.c.Enqueue(b.ctx, "shop.Charge", struct{}{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", NewHandler(b.c, Options{})))
	f := &adminFixture{b: b, h: mux}

	r := f.do(t, "GET", "/admin/jobs/"+id.String(), "", "", "")
	if held, _ := r.body["held"].(string); r.status != 200 || !strings.HasPrefix(held, "circuit breaker of task shop.Charge is open until ") {
		t.Errorf("GET job %s = %d %s, want held by the open breaker", id, r.status, r.raw)
	}
	r = f.do(t, "GET", "/admin/breakers", "", "", "")
	bs, _ := r.body["breakers"].([]any)
	if r.status != 200 || len(bs) != 1 {
		t.Fatalf("breakers = %s, want one", r.raw)
	}
	if br := bs[0].(map[string]any); br["state"] != "open" || br["failures"] != 1.0 || br["threshold"] != 1.0 ||
		!strings.Contains(br["last_error"].(string), "503") || br["recovery_in_seconds"].(float64) <= 0 {
		t.Errorf("breaker = %v, want open after 1 dependency failure, recovery pending", br)
	}
	r = f.do(t, "GET", "/admin/tasks", "", "", "")
	ts, _ := r.body["tasks"].([]any)
	if len(ts) != 1 || ts[0].(map[string]any)["circuit"] != "open" {
		t.Errorf("tasks = %s, want shop.Charge's circuit open", r.raw)
	}

	// One open breaker is a degraded task, not an unhealthy queue: every
	// probe still answers 200.
	r = f.do(t, "GET", "/admin/stats", "", "", "")
	if deg, _ := r.body["degraded"].([]any); r.body["is_healthy"] != true || len(deg) != 1 || deg[0] != "shop.Charge" {
		t.Errorf("stats = is_healthy %v, degraded %v; want healthy, shop.Charge degraded", r.body["is_healthy"], r.body["degraded"])
	}
	r = f.do(t, "GET", "/admin/health", "", "", "")
	if deg, _ := r.body["degraded"].([]any); r.status != 200 || r.body["status"] != "degraded" || len(deg) != 1 ||
		deg[0].(map[string]any)["task"] != "shop.Charge" || r.body["problems"] != nil {
		t.Errorf("health = %d %s, want 200 degraded for shop.Charge", r.status, r.raw)
	}
	for _, probe := range []string{"/admin/readyz", "/admin/livez"} {
		if r = f.do(t, "GET", probe, "", "", ""); r.status != 200 {
			t.Errorf("%s = %d %s, want 200 with an open breaker", probe, r.status, r.raw)
		}
	}
}

// TestAdminHandler_Probes: /health is 503 when jobs wait that no live
// worker runs; /readyz and /livez answer probes without the token that
// ProtectReads asks of every other read.
func TestAdminHandler_Probes(t *testing.T) {
	t.Parallel()
	b := setup(t, queuemax.Config{Shards: 2})
	if _, err := b.c.Enqueue(b.ctx, "shop.Nobody", struct{}{}, queuemax.Opts{AllowUnknownTask: true}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", NewHandler(b.c, Options{Token: "s3cret", ProtectReads: true})))
	f := &adminFixture{b: b, h: mux}
	if r := f.do(t, "GET", "/admin/health", "", "", ""); r.status != 401 {
		t.Errorf("health without the token = %d %s, want 401 (ProtectReads)", r.status, r.raw)
	}
	r := f.do(t, "GET", "/admin/health", "Bearer s3cret", "", "")
	probs, _ := r.body["problems"].([]any)
	if r.status != 503 || r.body["status"] != "unhealthy" || len(probs) != 1 || !strings.Contains(probs[0].(string), "shop.Nobody has 1 pending jobs and no live worker") {
		t.Errorf("health = %d %s, want 503 unhealthy naming shop.Nobody", r.status, r.raw)
	}
	if r = f.do(t, "GET", "/admin/readyz", "", "", ""); r.status != 200 || r.body["status"] != "ready" {
		t.Errorf("readyz = %d %s, want 200 ready without a token", r.status, r.raw)
	}
	if r = f.do(t, "GET", "/admin/livez", "", "", ""); r.status != 200 || r.body["status"] != "alive" {
		t.Errorf("livez = %d %s, want 200 alive", r.status, r.raw)
	}
	b.c.Close()
	if r = f.do(t, "GET", "/admin/readyz", "", "", ""); r.status != 503 {
		t.Errorf("readyz after Close = %d %s, want 503", r.status, r.raw)
	}
}
