package queuemax

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestClient_Snooze(t *testing.T) {
	t.Parallel()
	var runs, forever atomic.Int64
	// Snoozes twice (10ms), then succeeds, with one attempt allowed: the
	// snoozes spent none.
	wait := DefineResult("t.Wait", TaskOptions{MaxRetries: Ptr(0)}, func(ctx context.Context, _ struct{}) (int64, error) {
		if n := runs.Add(1); n <= 2 {
			return 0, Snooze(10 * time.Millisecond)
		}
		return runs.Load(), nil
	})
	loop := Define("t.Loop", TaskOptions{MaxRetries: Ptr(5)}, func(context.Context, struct{}) error {
		forever.Add(1)
		return Snooze(0)
	})
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			runs.Store(0)
			forever.Store(0)
			cfg := Config{Handlers: []Handler{wait, loop}, MaxSnoozes: 3}
			if backend == "PostgreSQL" {
				cfg.Store = newPGTarget(t)
			}
			b := setup(t, cfg)
			done := collect(b.c, EventCompleted, EventFailed)
			run(t, b.c)
			id, err := b.c.Enqueue(b.ctx, "t.Wait", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			if e := waitEvents(t, done, 1)[0]; e.Kind != EventCompleted || e.JobID != id {
				t.Fatalf("event %+v; want job_completed for %d", e, id)
			}
			j, err := b.c.Job(b.ctx, id)
			if err != nil || j.Snoozes != 2 || j.Attempts != 1 || string(j.Result) != "3" {
				t.Fatalf("job = %+v, %v; want completed after 2 snoozes, 1 attempt, result 3", j, err)
			}
			if got, err := b.c.Jobs(b.ctx, ListParams{Task: "t.Wait"}); err != nil || len(got) != 1 || got[0].Snoozes != 2 {
				t.Errorf("Jobs = %v, %v; want the job with 2 snoozes", got, err)
			}

			// Past MaxSnoozes the job is dead-lettered, saying why.
			id, err = b.c.Enqueue(b.ctx, "t.Loop", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			if e := waitEvents(t, done, 1)[0]; e.Kind != EventFailed || e.JobID != id {
				t.Fatalf("event %+v; want job_failed for %d", e, id)
			}
			j, _ = b.c.Job(b.ctx, id)
			if n := forever.Load(); n != 4 || j.Snoozes != 3 || j.Attempts != 1 || !strings.Contains(j.LastError, "snoozed 4 times") ||
				!strings.Contains(j.LastError, "MaxSnoozes = 3") {
				t.Errorf("runs %d, job %+v; want 4 runs, 3 snoozes, 1 attempt, a snooze-limit error", n, j)
			}
		})
	}
}
