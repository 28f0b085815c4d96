package cli_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// TestGlobalLimitsShown: while a worker process holds its task's only
// global slot, stats shows the limit's use and list says why a pending job
// waits.
func TestGlobalLimitsShown(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 1)
	var holding atomic.Bool
	release := make(chan struct{})
	h := queuemax.Define("t.Global", queuemax.TaskOptions{GlobalConcurrency: 1}, func(context.Context, struct{}) error {
		holding.Store(true)
		<-release
		return nil
	})
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Shards: 1, Handlers: []queuemax.Handler{h}, Workers: 2,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 6 { // one runs, three wait in their process for the slot, two are pending
		if _, err := c.Enqueue(t.Context(), "t.Global", struct{}{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	defer close(release)
	deadline := time.Now().Add(30 * time.Second)
	for !holding.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no job started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d := []string{"--data-dir", dir}
	res := ok(t, qm(t, append(d, "stats")...), "stats")
	if !strings.Contains(res.stdout, "task t.Global") || !strings.Contains(res.stdout, "running 1/1") {
		t.Errorf("stats shows no global limit use:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--status", "pending")...), "list")
	if !strings.Contains(res.stdout, "held: global concurrency of task t.Global reached (1/1 running)") {
		t.Errorf("list does not say why the job waits:\n%s", res.stdout)
	}
}

// TestGlobalLimitsPerKeyShown: while a worker process holds the only slot
// of key c=1 of a task limited per key, stats shows the limit per key and
// list names the key a pending job waits for (the CLI has no handler: it
// reads the key name from the stored state).
func TestGlobalLimitsPerKeyShown(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 1)
	var holding atomic.Bool
	release := make(chan struct{})
	h := queuemax.Define("t.Keyed", queuemax.TaskOptions{GlobalConcurrency: 1, LimitBy: "c"}, func(context.Context, struct {
		C int `json:"c"`
	}) error {
		holding.Store(true)
		<-release
		return nil
	})
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Shards: 1, Handlers: []queuemax.Handler{h}, Workers: 2,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 { // one runs, one waits for the key's slot
		if _, err := c.Enqueue(t.Context(), "t.Keyed", map[string]int{"c": 1}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	defer close(release)
	deadline := time.Now().Add(30 * time.Second)
	for !holding.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no job started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d := []string{"--data-dir", dir}
	res := ok(t, qm(t, append(d, "stats")...), "stats")
	if !strings.Contains(res.stdout, "task t.Keyed per c") || !strings.Contains(res.stdout, "1 keys in use, the busiest: running 1/1") {
		t.Errorf("stats shows no per-key limit use:\n%s", res.stdout)
	}
	res = ok(t, qm(t, append(d, "list", "--status", "pending")...), "list")
	if !strings.Contains(res.stdout, "held: global concurrency of task t.Keyed reached for c=1 (1/1 running)") {
		t.Errorf("list does not say which key the job waits for:\n%s", res.stdout)
	}
}
