package queuemaxhttp

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// TestAdminHandler_GlobalLimits: the admin API shows a global limit's use
// in /stats and why a job it holds waits.
func TestAdminHandler_GlobalLimits(t *testing.T) {
	t.Parallel()
	var holding atomic.Bool
	release := make(chan struct{})
	h := queuemax.Define("shop.Export", queuemax.TaskOptions{GlobalConcurrency: 1}, func(context.Context, struct{}) error {
		holding.Store(true)
		<-release
		return nil
	})
	b := setup(t, queuemax.Config{Shards: 1, Handlers: []queuemax.Handler{h}, Workers: 2})
	var last queuemax.JobID
	for range 6 { // one runs, three wait in the process for the slot, two are pending
		id, err := b.c.Enqueue(b.ctx, "shop.Export", struct{}{}, queuemax.Opts{})
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	run(t, b.c)
	defer close(release)
	deadline := time.Now().Add(30 * time.Second)
	for !holding.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no job started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", NewHandler(b.c, Options{})))
	f := &adminFixture{b: b, h: mux}
	r := f.do(t, "GET", "/admin/jobs/"+last.String(), "", "", "")
	if want := "global concurrency of task shop.Export reached (1/1 running)"; r.status != 200 || r.body["held"] != want {
		t.Errorf("GET job %s = %d %s, want held: %q", last, r.status, r.raw, want)
	}
	r = f.do(t, "GET", "/admin/stats", "", "", "")
	ls, _ := r.body["global_limits"].([]any)
	if len(ls) != 1 {
		t.Fatalf("stats global_limits = %v, want one", r.body["global_limits"])
	}
	if l := ls[0].(map[string]any); l["name"] != "shop.Export" || l["concurrency"] != 1.0 || l["running"] != 1.0 {
		t.Errorf("global limit = %v, want shop.Export running 1 of 1", l)
	}
}
