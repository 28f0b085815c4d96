package engine

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// An outage of many failures logs one line per failing service, and one
// when it recovers, with the count: never one per failure.
func TestOutagesLogBounded(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o := newOutages(log)
	ctx := context.Background()
	down := errors.New("connection refused")
	var wg sync.WaitGroup
	for _, svc := range []string{"heartbeats", "claims", "completions"} {
		wg.Go(func() {
			for range 1000 {
				o.fail(ctx, slog.LevelWarn, svc, svc+" failed", down, "job_id", 7)
			}
		})
	}
	wg.Wait()
	o.ok(ctx, "heartbeats")
	o.ok(ctx, "claims")
	o.ok(ctx, "claims") // no outage left: nothing
	o.ok(ctx, "completions")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines for 3000 failures of 3 services, want 6 (a failure and a recovery each):\n%s", len(lines), buf.String())
	}
	for _, l := range lines {
		if strings.Contains(l, "recovered") && !strings.Contains(l, "failures=1000") {
			t.Errorf("recovery line without the count of failures: %s", l)
		}
	}
	if o.active.Load() != 0 {
		t.Errorf("%d outages open after every service recovered", o.active.Load())
	}

	// A failure after the outage ended starts a new one: logged again.
	buf.Reset()
	o.fail(ctx, slog.LevelWarn, "claims", "claim failed", down)
	o.fail(ctx, slog.LevelWarn, "claims", "claim failed", down)
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("%d lines for a new outage's two failures, want 1:\n%s", n, buf.String())
	}

	// Still failing after outageRepeat: said again, with the count;
	// failing again after outageQuiet without a success: a new outage.
	buf.Reset()
	o.mu.Lock()
	o.m["claims"].said = time.Now().Add(-outageRepeat)
	o.mu.Unlock()
	o.fail(ctx, slog.LevelWarn, "claims", "claim failed", down)
	if s := buf.String(); !strings.Contains(s, "still failing") || !strings.Contains(s, "failures=3") {
		t.Errorf("want a reminder with failures=3, got %q", s)
	}
	buf.Reset()
	o.mu.Lock()
	o.m["claims"].last = time.Now().Add(-outageQuiet)
	o.mu.Unlock()
	o.fail(ctx, slog.LevelWarn, "claims", "claim failed", down)
	if s := buf.String(); strings.Count(s, "\n") != 1 || strings.Contains(s, "still failing") {
		t.Errorf("want a new outage's first line after a quiet spell, got %q", s)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
