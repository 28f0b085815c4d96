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

func TestShutdown_HandlerIgnoringCancellation(t *testing.T) {
	t.Parallel()
	// Slack for a loaded machine: releasing jobs and stopping services.
	const slack = 10 * time.Second

	t.Run("RunReturnsWithinDrainTimeoutPlusGrace", func(t *testing.T) {
		t.Parallel()
		h, started := stubborn(t, "t.Stubborn")
		dir := t.TempDir()
		const drain = 100 * time.Millisecond
		// The abandoned handler returns after the test: it must not log to t.
		b := setup(t, Config{Dir: dir, Shards: 1, Handlers: []Handler{h}, DrainTimeout: drain, Logger: quiet,
			HeartbeatInterval: 50 * time.Millisecond, StuckTimeout: 300 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.WithoutCancel(b.ctx))
		done := make(chan error, 1)
		go func() { done <- b.c.Run(ctx) }()
		id, err := b.c.Enqueue(b.ctx, "t.Stubborn", echoArgs{}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		<-started
		cancel()
		begin := time.Now()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
			if d := time.Since(begin); d < drain {
				t.Errorf("Run returned after %v, before the drain timeout", d)
			}
		case <-time.After(drain + ShutdownGrace + slack):
			t.Fatal("Run did not return: a handler ignoring cancellation blocks shutdown")
		}

		// The abandoned job is not lost: its lease lapses and another
		// worker runs it.
		ran := make(chan struct{}, 1)
		h2 := Define("t.Stubborn", TaskOptions{}, func(context.Context, echoArgs) error {
			ran <- struct{}{}
			return nil
		})
		w := setup(t, Config{Dir: dir, Shards: 1, Handlers: []Handler{h2}, HeartbeatInterval: 50 * time.Millisecond,
			StuckTimeout: 300 * time.Millisecond, RecoveryInterval: 50 * time.Millisecond})
		evs := collect(w.c, EventCompleted)
		stop := run(t, w.c)
		waitEvents(t, evs, 1)
		stop()
		<-ran
		if j, err := w.c.Job(w.ctx, id); err != nil || j.Status != StatusCompleted {
			t.Errorf("job %d = %+v, %v; want completed by the second worker", id, j, err)
		}
	})

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
