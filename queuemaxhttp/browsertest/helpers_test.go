package browsertest

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/queuemax/queuemax"
)

// testBundle is an open client on a fresh directory.
type testBundle struct {
	c   *queuemax.Client
	ctx context.Context
	dir string
}

// setup opens a client on a fresh directory; cfg's Dir and Logger are
// filled in when empty, and the client is closed by t.Cleanup.
func setup(t *testing.T, cfg queuemax.Config) *testBundle {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c, err := queuemax.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &testBundle{c: c, ctx: t.Context(), dir: cfg.Dir}
}

// run starts c.Run and returns a stop function that cancels it and checks
// that Run returned nil.
func run(t *testing.T, c *queuemax.Client) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
