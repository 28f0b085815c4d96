package queuemax

import (
	"context"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"
)

// untilSignalChild is the program docs/workers.md recommends: a worker
// main that runs until a signal with RunUntilSignal. Its one task runs
// for a minute unless cancelled; the drain timeout is a minute too, so
// only the second signal can end it quickly.
func untilSignalChild(dir string, shards int, say func(string, ...any)) int {
	slow := Define("t.Slow", TaskOptions{}, func(ctx context.Context, _ echoArgs) error {
		say("started")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Minute):
			return nil
		}
	})
	// The log goes to stdout, one line per record, without the time, so
	// that the test sees when the first signal was taken.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	c, err := Open(context.Background(), Config{Dir: dir, Shards: shards, Handlers: []Handler{slow},
		DrainTimeout: time.Minute, Logger: logger})
	if err != nil {
		say("error %v", err)
		return 1
	}
	defer c.Close()
	if err := c.RunUntilSignal(context.Background()); err != nil {
		say("error %v", err)
		return 1
	}
	say("stopped")
	return 0
}

// TestRunUntilSignal_SecondSignal: a worker process running the documented
// RunUntilSignal drains on the first SIGINT and, on a second one (SIGTERM
// here, either works), releases its running job to pending with no
// attempt spent and exits within 5 s, though the job would run for a
// minute and the drain timeout is a minute.
func TestRunUntilSignal_SecondSignal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, Config{Dir: dir, Shards: 2})
	id, err := b.c.Enqueue(b.ctx, "t.Slow", echoArgs{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, "untilsignal", dir, 2)
	ch.expect(t, "started")
	if err := ch.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	ch.expect(t, `level=INFO msg="queuemax: signal received: draining`)
	start := time.Now()
	if err := ch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ch.expect(t, "stopped")
	exited := make(chan error, 1)
	go func() { exited <- ch.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("worker process: %v, want a clean exit", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker process did not exit after the second signal")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("exit took %s after the second signal, want within 5s", took)
	}
	j, err := b.c.Job(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != StatusPending || j.Attempts != 0 {
		t.Errorf("job after the second signal: status %s, attempts %d; want pending with no attempt spent", j.Status, j.Attempts)
	}
}
