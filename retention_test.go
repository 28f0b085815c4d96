package queuemax

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestClient_CompletedRetention: a completed job (no result) stays listed as
// completed with its finish time for Config.CompletedRetention; Cleanup
// with the configured ages leaves it until then, deletes it after, and
// keeps a failed job of the same age (CleanupAge governs that one).
func TestClient_CompletedRetention(t *testing.T) {
	t.Parallel()
	ok := Define("t.OK", TaskOptions{}, func(context.Context, struct{}) error { return nil })
	bad := Define("t.Bad", TaskOptions{}, func(context.Context, struct{}) error { return Permanent(errors.New("no")) })
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var skew atomic.Int64 // the test clock runs this far ahead
			cfg := Config{Handlers: []Handler{ok, bad}, CompletedRetention: time.Hour,
				now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}
			if backend == "PostgreSQL" {
				cfg.DSN = pgTestDSN(t)
				cfg.Schema = pgTestSchema(t, cfg.DSN)
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
			waitEvents(t, done, 2)
			stop()

			j, err := b.c.Job(b.ctx, id)
			if err != nil || j.Status != StatusCompleted || j.CompletedAt.IsZero() || j.Result != nil {
				t.Fatalf("Job = %+v, %v; want completed with a finish time and no result", j, err)
			}
			list, err := b.c.Jobs(b.ctx, ListParams{Status: StatusCompleted})
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
	for _, tc := range []struct {
		env  string
		want time.Duration
		bad  bool
	}{
		{"0", RetentionOff, false},
		{"90", 90 * time.Second, false},
		{"2h", 2 * time.Hour, false},
		{" 30m ", 30 * time.Minute, false},
		{"-1", 0, true},
		{"-1h", 0, true},
		{"soon", 0, true},
	} {
		cfg, _, err := ConfigFromEnv(func(k string) string {
			if k == "QUEUE_MAX_COMPLETED_RETENTION" {
				return tc.env
			}
			return ""
		})
		var ce *ConfigError
		switch {
		case tc.bad && (!errors.As(err, &ce) || ce.Field != "QUEUE_MAX_COMPLETED_RETENTION"):
			t.Errorf("QUEUE_MAX_COMPLETED_RETENTION=%q: error %v, want a ConfigError naming it", tc.env, err)
		case !tc.bad && (err != nil || cfg.CompletedRetention != tc.want):
			t.Errorf("QUEUE_MAX_COMPLETED_RETENTION=%q: %v, %v; want %v", tc.env, cfg.CompletedRetention, err, tc.want)
		}
	}
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
		if got := cleanupInterval(retention); got != want {
			t.Errorf("cleanupInterval(%v) = %v, want %v", retention, got, want)
		}
	}
	if got := cleanupInterval(RetentionOff); got != time.Hour {
		t.Errorf("cleanupInterval(off) = %v, want 1h", got)
	}
}
