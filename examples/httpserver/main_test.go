package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/queuemaxprom"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServe(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	col := queuemaxprom.NewCollector(queuemaxprom.Options{})
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: t.TempDir(), Shards: 2, Handlers: tasks.Handlers(), Logger: log,
		Middleware: []queuemax.JobMiddleware{col}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Attach the collector before subscribing: its event callback then
	// runs first, so a completion the test awaits is already counted.
	metrics, err := metricsHandler(c, col)
	if err != nil {
		t.Fatal(err)
	}
	completed, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	outbox := &tasks.Outbox{}
	srvCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	var stdout strings.Builder
	go func() { served <- serve(srvCtx, c, ln, "tok", outbox, metrics, &stdout) }()

	call := func(method, path, token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		var body map[string]any
		b, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
		return res.StatusCode, body
	}

	// Periodic tasks complete too: wait for the welcome email's job.
	sendEmail := tasks.New(c).SendEmail.Name()
	status, body := call("POST", "/signup?email=ada@example.com", "")
	if status != http.StatusAccepted || body["job_id"] == nil {
		t.Fatalf("POST /signup = %d %v", status, body)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var done *queuemax.Event
	for done == nil {
		select {
		case e := <-completed:
			if e.Task == sendEmail {
				done = e
			}
		case <-waitCtx.Done():
			t.Fatalf("no job_completed for %s: %v", sendEmail, waitCtx.Err())
		}
	}
	if float64(done.JobID) != body["job_id"] {
		t.Errorf("completed job %d, want %v", done.JobID, body["job_id"])
	}
	if _, body := call("GET", "/outbox", ""); !strings.Contains(jsonString(body), "ada@example.com") {
		t.Errorf("GET /outbox = %v", body)
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	prom, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`queuemax_jobs_completed_total{task="` + sendEmail + `"} 1`,
		`queuemax_job_run_seconds_count{outcome="completed",task="` + sendEmail + `"} 1`, "go_goroutines "} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("GET /metrics lacks %q:\n%s", want, prom)
		}
	}
	if status, _ := call("POST", "/signup", ""); status != http.StatusBadRequest {
		t.Errorf("POST /signup without email = %d, want 400", status)
	}
	if status, body := call("GET", "/admin/stats", ""); status != 200 || body["num_shards"] != 2.0 {
		t.Errorf("GET /admin/stats = %d %v", status, body)
	}
	if status, _ := call("POST", "/admin/retry", ""); status != http.StatusUnauthorized {
		t.Errorf("POST /admin/retry without token = %d, want 401", status)
	}
	if status, body := call("POST", "/admin/retry", "tok"); status != 200 || body["retried"] != 0.0 {
		t.Errorf("POST /admin/retry = %d %v", status, body)
	}

	stop()
	if err := <-served; err != nil {
		t.Errorf("serve = %v, want nil", err)
	}
	if !strings.HasPrefix(stdout.String(), "listening on http://127.0.0.1:") {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRun_RefusesNonLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.1:80", "example.com:80"} {
		err := run(t.Context(), config{addr: addr, dir: t.TempDir()}, slog.New(slog.DiscardHandler), io.Discard)
		if !errors.Is(err, errNotLoopback) {
			t.Errorf("run(addr %q) = %v, want errNotLoopback", addr, err)
		}
	}
	if err := checkLoopback("[::1]:0"); err != nil {
		t.Errorf("checkLoopback([::1]:0) = %v", err)
	}
}
