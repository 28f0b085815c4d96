package queuemax

import (
	"context"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// probeChild runs t.Probe jobs whose handler never returns: a worker that
// takes the probe of an open breaker and is then killed.
func probeChild(ctx context.Context, dir string, shards int, say func(string, ...any)) int {
	h := Define("t.Probe", TaskOptions{}, func(ctx context.Context, _ struct{}) error {
		say("started")
		<-ctx.Done()
		return ctx.Err()
	})
	c, err := Open(ctx, Config{Dir: dir, Shards: shards, Logger: slog.New(slog.DiscardHandler), Handlers: []Handler{h},
		CircuitThreshold: 1, CircuitTimeout: time.Second, WorkerID: "child"})
	if err != nil {
		say("error %v", err)
		return 1
	}
	defer c.Close()
	if err := c.Run(ctx); err != nil {
		say("error %v", err)
		return 1
	}
	return 0
}

// TestBreakers_ProbeHolderKilled: a worker process killed with kill -9
// while it holds a breaker's probe frees the probe when its hold expires
// (CircuitTimeout after it took it): another process then probes, and its
// success closes the breaker.
func TestBreakers_ProbeHolderKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, Config{Dir: dir, Shards: 1})
	bs := b.c.st
	now := time.Now()
	if _, err := bs.BreakerUpdate(b.ctx, []string{"t.Probe"}, func(r *store.BreakerRow) bool {
		r.State, r.Failures, r.OpenedAt, r.Until, r.UpdatedAt = store.BreakerOpen, 1, now.Add(-time.Minute), now, now
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Enqueue(b.ctx, "t.Probe", struct{}{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, "probe", dir, 1)
	ch.expect(t, "started")
	var held store.BreakerRow
	waitFor(t, "the child's probe in the store", func() bool {
		rows, err := bs.BreakerList(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = rows[0]
		return held.State == store.BreakerHalfOpen && strings.HasPrefix(held.ProbeOwner, "child#")
	})
	if err := ch.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ch.cmd.Wait()

	// Another worker: it gets the probe once the dead child's hold lapses.
	ran := make(chan time.Time, 10)
	h := Define("t.Probe", TaskOptions{}, func(context.Context, struct{}) error { ran <- time.Now(); return nil })
	w := setup(t, Config{Dir: dir, Shards: 1, Handlers: []Handler{h}, CircuitThreshold: 1, CircuitTimeout: time.Second})
	if _, err := w.c.Enqueue(w.ctx, "t.Probe", struct{}{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	run(t, w.c)
	select {
	case at := <-ran:
		if at.Before(held.ProbeExpires) {
			t.Errorf("a second probe ran at %v, before the dead holder's hold expired at %v", at, held.ProbeExpires)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("no probe ran after the holder was killed")
	}
	waitFor(t, "the breaker to close", func() bool {
		infos, err := w.c.CircuitBreakers(w.ctx)
		return err == nil && len(infos) == 1 && infos[0].State == "closed"
	})
}
