package queuemaxtest

import (
	"context"
	"sync"
	"testing"

	"github.com/queuemax/queuemax"
)

// Run starts c.Run in its own goroutine, for tests that need real workers
// (Drain and WorkOne run jobs without them). The returned stop cancels
// Run's context, waits for it to return and fails the test unless it
// returned nil; t.Cleanup calls it too, so a test may leave it unused.
// Run's context is not the test's: it outlives t.Context until stop.
func Run(tb testing.TB, c *queuemax.Client) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(tb.Context()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("queuemaxtest.Run: Run returned %v, want nil", err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}
