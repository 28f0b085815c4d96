package queuemax

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/engine"
)

// TestClient_CompletedRetention: a completed job (no result) stays listed as
// completed with its finish time for Config.CompletedRetention; Cleanup
// with the configured ages leaves it until then, deletes it after, and
// keeps a failed job of the same age (CleanupAge governs that one).
func TestClient_CompletedRetention(t *testing.T) {
	t.Parallel()
	ok := Define("t.OK", TaskOptions{}, func(context.Context, struct{}) error { return nil })
	bad := Define("t.Bad", TaskOptions{}, func(context.Context, struct{}) error { return Permanent(errors.New("no")) })
	res := DefineResult("t.Res", TaskOptions{}, func(context.Context, struct{}) (int, error) { return 7, nil })
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var skew atomic.Int64 // the test clock runs this far ahead
			cfg := Config{Handlers: []Handler{ok, bad, res}, CompletedRetention: time.Hour,
				now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}
			if backend == "PostgreSQL" {
				cfg.Store = newPGTarget(t)
			}
			b := setup(t, cfg)
			done := collect(b.c, EventCompleted, EventFailed)
			stop := run(t, b.c)
			id, err := b.c.Enqueue(b.ctx, "t.OK", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			failedID, err := b.c.Enqueue(b.ctx, "t.Bad", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			resultID, err := b.c.Enqueue(b.ctx, "t.Res", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			waitEvents(t, done, 3)
			stop()

			j, err := b.c.Job(b.ctx, id)
			if err != nil || j.Status != StatusCompleted || j.CompletedAt.IsZero() || j.Result != nil {
				t.Fatalf("Job = %+v, %v; want completed with a finish time and no result", j, err)
			}
			list, err := b.c.Jobs(b.ctx, ListParams{Status: StatusCompleted, Task: "t.OK"})
			if err != nil || len(list) != 1 || list[0].ID != id {
				t.Fatalf("Jobs(completed) = %v, %v; want job %d", list, err, id)
			}
			if res, err := b.c.Cleanup(b.ctx, 0); err != nil || res.Jobs != 0 {
				t.Fatalf("Cleanup within retention = %+v, %v; want nothing deleted", res, err)
			}
			skew.Store(int64(2 * time.Hour))
			if res, err := b.c.Cleanup(b.ctx, 0); err != nil || res.Jobs != 1 {
				t.Fatalf("Cleanup after retention = %+v, %v; want 1 job deleted", res, err)
			}
			if _, err := b.c.Job(b.ctx, id); !errors.Is(err, ErrJobNotFound) {
				t.Errorf("completed job after retention: %v, want ErrJobNotFound", err)
			}
			if j, err := b.c.Job(b.ctx, failedID); err != nil || j.Status != StatusFailed {
				t.Errorf("failed job = %+v, %v; want kept (CleanupAge is 7 days)", j, err)
			}
			if j, err := b.c.Job(b.ctx, resultID); err != nil || string(j.Result) != "7" {
				t.Errorf("job with a result = %+v, %v; want kept for CleanupAge", j, err)
			}
			skew.Store(int64(8 * 24 * time.Hour))
			if res, err := b.c.Cleanup(b.ctx, 0); err != nil || res.Jobs != 2 {
				t.Errorf("Cleanup after CleanupAge = %+v, %v; want the failed job and the result deleted", res, err)
			}
		})
	}
}

// TestClient_RetentionOff: with RetentionOff a completed job without a
// result is deleted when it completes, as queue-max does, while one with a
// result is kept (for CleanupAge).
func TestClient_RetentionOff(t *testing.T) {
	t.Parallel()
	plain := Define("t.Plain", TaskOptions{}, func(context.Context, struct{}) error { return nil })
	res := DefineResult("t.Res", TaskOptions{}, func(context.Context, struct{}) (int, error) { return 7, nil })
	b := setup(t, Config{Handlers: []Handler{plain, res}, CompletedRetention: RetentionOff})
	done := collect(b.c, EventCompleted)
	stop := run(t, b.c)
	a, err := b.c.Enqueue(b.ctx, "t.Plain", struct{}{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.c.Enqueue(b.ctx, "t.Res", struct{}{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	waitEvents(t, done, 2)
	stop()
	if _, err := b.c.Job(b.ctx, a); !errors.Is(err, ErrJobNotFound) {
		t.Errorf("completed job without result: %v, want ErrJobNotFound (deleted)", err)
	}
	if j, err := b.c.Job(b.ctx, r); err != nil || j.Status != StatusCompleted || string(j.Result) != "7" {
		t.Errorf("job with result = %+v, %v; want completed with result 7", j, err)
	}
	if res, err := b.c.Cleanup(b.ctx, 0); err != nil || res.Jobs != 0 {
		t.Errorf("Cleanup = %+v, %v; want the result kept for CleanupAge", res, err)
	}
}

func TestConfig_CompletedRetention(t *testing.T) {
	t.Parallel()
	if d := (Config{}).withDefaults().CompletedRetention; d != time.Hour {
		t.Errorf("default CompletedRetention = %v, want 1h", d)
	}
	err := Config{CompletedRetention: -2 * time.Second}.withDefaults().validate()
	if ce, ok := errors.AsType[*ConfigError](err); !ok || ce.Field != "CompletedRetention" {
		t.Errorf("validate(CompletedRetention -2s) = %v, want a ConfigError naming CompletedRetention", err)
	}
	if err := (Config{CompletedRetention: RetentionOff}).withDefaults().validate(); err != nil {
		t.Errorf("validate(RetentionOff) = %v", err)
	}
	for retention, want := range map[time.Duration]time.Duration{
		10 * time.Minute: 5 * time.Minute, time.Hour: 30 * time.Minute, time.Minute: time.Minute, 24 * time.Hour: time.Hour,
	} {
		if got := engine.CleanupInterval(retention); got != want {
			t.Errorf("CleanupInterval(%v) = %v, want %v", retention, got, want)
		}
	}
	if got := engine.CleanupInterval(RetentionOff); got != time.Hour {
		t.Errorf("CleanupInterval(off) = %v, want 1h", got)
	}
}
