package queuemax

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// stubborn returns a handler that signals started and then blocks, ignoring
// its context, until the test ends.
func stubborn(t *testing.T, name string) (Handler, <-chan struct{}) {
	started, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { close(unblock) })
	h := Define(name, TaskOptions{}, func(context.Context, echoArgs) error {
		once.Do(func() { close(started) })
		<-unblock
		return nil
	})
	return h, started
}

var quiet = slog.New(slog.DiscardHandler)

// TestShutdown_HandlerIgnoringCancellation: Client.Stop returns when its
// context ends although a handler ignores cancellation. (The engine's side,
// Run returning within DrainTimeout + ShutdownGrace and the abandoned job
// running again, is runtime/engine's
// TestRun_ShutdownAbandonsHandlerIgnoringCancellation.)
func TestShutdown_HandlerIgnoringCancellation(t *testing.T) {
	t.Parallel()
	// Slack for a loaded machine: releasing jobs and stopping services.
	const slack = 10 * time.Second

	t.Run("StopReturnsWhenCtxEnds", func(t *testing.T) {
		t.Parallel()
		h, started := stubborn(t, "t.Stubborn")
		b := setup(t, Config{Shards: 1, Handlers: []Handler{h}, DrainTimeout: time.Hour, Logger: quiet})
		done := make(chan error, 1)
		go func() { done <- b.c.Run(context.WithoutCancel(b.ctx)) }()
		if _, err := b.c.Enqueue(b.ctx, "t.Stubborn", echoArgs{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		<-started
		ctx, cancel := context.WithTimeout(b.ctx, 50*time.Millisecond)
		defer cancel()
		stopped := make(chan error, 1)
		go func() { stopped <- b.c.Stop(ctx) }()
		select {
		case err := <-stopped:
			if err == nil {
				t.Error("Stop = nil, want the context's error")
			}
		case <-time.After(slack):
			t.Fatal("Stop did not return when its context ended")
		}
		// Run follows within the grace, not after DrainTimeout (an hour).
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		case <-time.After(ShutdownGrace + slack):
			t.Fatal("Run did not return after Stop's deadline")
		}
	})
}
