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
}
