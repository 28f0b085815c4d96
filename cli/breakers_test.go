package cli_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// TestBreakerShown: a job an open circuit breaker holds says so in list
// and list --json, and stats shows the stored breaker with its true
// consecutive count, though this process runs no worker.
func TestBreakerShown(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	h := queuemax.Define("shop.Charge", queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0)}, func(context.Context, struct{}) error {
		return queuemax.Unavailable(errors.New("payments API: 503"))
	})
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Shards: 1, Handlers: []queuemax.Handler{h},
		CircuitThreshold: 1, CircuitTimeout: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := c.Subscribe(queuemax.EventFailed)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if _, err := c.Enqueue(t.Context(), "shop.Charge", struct{}{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(30 * time.Second):
		t.Fatal("the failing job did not fail")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	id, err := c.Enqueue(t.Context(), "shop.Charge", struct{}{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	jobs := listJobs(t, queuemaxBin, "--data-dir", dir, "list", "--status", "pending")
	if len(jobs) != 1 {
		t.Fatalf("list --json: %v, want the held job", jobs)
	}
	held, _ := jobs[0]["held"].(string)
	if !strings.HasPrefix(held, "circuit breaker of task shop.Charge is open until ") || !strings.Contains(held, "after 1 dependency failure") {
		t.Errorf("list --json held = %q, want the open breaker's reason", held)
	}
	out := ok(t, qm(t, "--data-dir", dir, "list", "--status", "pending"), "list").stdout
	if !strings.Contains(out, "held: circuit breaker of task shop.Charge is open until") || !strings.Contains(out, id.String()) {
		t.Errorf("list does not show why job %s is held:\n%s", id, out)
	}
	out = ok(t, qm(t, "--data-dir", dir, "stats"), "stats").stdout
	if !strings.Contains(out, "open (at most 1 consecutive dependency failures)") || !strings.Contains(out, "open until ") ||
		!strings.Contains(out, "last: dependency unavailable: payments API: 503") {
		t.Errorf("stats does not show the stored breaker:\n%s", out)
	}
	// One dependency down: the task is degraded, the queue healthy.
	if !regexp.MustCompile(`(?m)^Healthy +yes$`).MatchString(out) || !regexp.MustCompile(`(?m)^Degraded +shop\.Charge \(breaker open\)$`).MatchString(out) {
		t.Errorf("stats with an open breaker: want Healthy yes and shop.Charge degraded:\n%s", out)
	}
}
