package queuemax

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClient_Work(t *testing.T) {
	t.Parallel()
	type addArgs struct{ A, B int }
	var starts int
	handlers := []Handler{
		DefineResult("t.Add", TaskOptions{}, func(_ context.Context, a addArgs) (int, error) { return a.A + a.B, nil }),
		DefineResult("t.Add2", TaskOptions{}, func(_ context.Context, a addArgs) (int, error) { return a.A + a.B, nil }),
		Define("t.Fail", TaskOptions{MaxRetries: Ptr(1)}, func(context.Context, struct{}) error { return errors.New("boom") }),
		Define("t.Snooze", TaskOptions{}, func(context.Context, struct{}) error { return Snooze(0) }),
		{Name: "t.Raw", Func: func(context.Context, *Job) (any, error) { return nil, nil }},
	}
	b := setup(t, Config{Handlers: handlers, Shards: 1, Hooks: Hooks{OnStart: func(context.Context, *Job) { starts++ }}})
	events, cancel := b.c.Subscribe(EventCompleted, EventRetried, EventFailed, EventSnoozed)
	defer cancel()
	work := func(task string, payload any) WorkResult {
		t.Helper()
		if _, err := b.c.Enqueue(b.ctx, task, payload, Opts{}); err != nil {
			t.Fatal(err)
		}
		jobs, err := b.c.Claim(b.ctx, "test", 1)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %v, %v; want one job", jobs, err)
		}
		res, err := b.c.Work(b.ctx, jobs[0])
		if err != nil {
			t.Fatalf("Work(%s): %v", task, err)
		}
		if e := recv(t, events, 1)[0]; e.JobID != jobs[0].ID {
			t.Errorf("Work(%s) emitted %+v, want an event for job %d", task, e, jobs[0].ID)
		}
		return res
	}
	if got := work("t.Add", addArgs{2, 3}); got.Outcome != OutcomeCompleted || got.Result != 5 || got.Err != nil {
		t.Errorf("Work(t.Add) = %+v, want completed with 5", got)
	}
	if got := work("t.Fail", struct{}{}); got.Outcome != OutcomeRetry || got.RetryAt.IsZero() || got.Err == nil {
		t.Errorf("Work(t.Fail) first = %+v, want a retry", got)
	}
	if got := work("t.Snooze", struct{}{}); got.Outcome != OutcomeSnoozed {
		t.Errorf("Work(t.Snooze) = %+v, want snoozed", got)
	}
	if starts != 3 {
		t.Errorf("OnStart ran %d times, want 3", starts)
	}

	// The lease is fenced: a job released after its claim cannot be recorded.
	if _, err := b.c.Enqueue(b.ctx, "t.Raw", struct{}{}, Opts{Priority: Ptr(PriorityHigh)}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.c.Claim(b.ctx, "test", 1)
	if err != nil || len(jobs) != 1 || jobs[0].Task != "t.Raw" {
		t.Fatalf("Claim = %v, %v; want the t.Raw job", jobs, err)
	}
	if err := b.c.Release(b.ctx, jobs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Work(b.ctx, jobs[0]); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Work(released job) error = %v, want ErrLeaseLost", err)
	}

	if diff := cmp.Diff([]string{"t.Add", "t.Add2"}, TaskNames[addArgs](b.c)); diff != "" {
		t.Errorf("TaskNames[addArgs] mismatch (-want +got):\n%s", diff)
	}
	if got := TaskNames[struct{ X int }](b.c); len(got) != 0 {
		t.Errorf("TaskNames[unused type] = %v, want none", got)
	}
}

// TestClient_WorkKeepsCompletedLikeRun: under Config.CompletedRetention a
// job Client.Work completes stays stored as completed, as it does when
// Run's workers complete it (both finish through the engine's one path);
// without retention it is deleted, by both.
func TestClient_WorkKeepsCompletedLikeRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		retention time.Duration
		kept      bool
	}{{"Retention", time.Hour, true}, {"RetentionOff", RetentionOff, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := Define("t.OK", TaskOptions{}, func(context.Context, struct{}) error { return nil })
			b := setup(t, Config{Shards: 1, Handlers: []Handler{h}, CompletedRetention: tc.retention})
			byWork, err := b.c.Enqueue(b.ctx, "t.OK", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := b.c.Claim(b.ctx, "test", 1)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Claim = %v, %v; want one job", jobs, err)
			}
			if res, err := b.c.Work(b.ctx, jobs[0]); err != nil || res.Outcome != OutcomeCompleted {
				t.Fatalf("Work = %+v, %v; want completed", res, err)
			}
			completed, unsubscribe := b.c.Subscribe(EventCompleted)
			defer unsubscribe()
			byRun, err := b.c.Enqueue(b.ctx, "t.OK", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			stop := run(t, b.c)
			recv(t, completed, 1)
			stop()
			for _, id := range []JobID{byWork, byRun} {
				j, err := b.c.Job(b.ctx, id)
				switch {
				case tc.kept && (err != nil || j.Status != StatusCompleted):
					t.Errorf("job %d (work %v) = %+v, %v; want kept as completed", id, id == byWork, j, err)
				case !tc.kept && !errors.Is(err, ErrJobNotFound):
					t.Errorf("job %d (work %v) = %+v, %v; want deleted", id, id == byWork, j, err)
				}
			}
		})
	}
}

// TestClient_ManualAcksEmitButRunNoHooks: Complete and Fail finish an
// attempt through the same path as Work, emitting its event, but as manual
// acknowledgements they run no Hooks; Work runs them.
func TestClient_ManualAcksEmitButRunNoHooks(t *testing.T) {
	t.Parallel()
	var hooks []string
	h := Define("t.OK", TaskOptions{}, func(context.Context, struct{}) error { return nil })
	b := setup(t, Config{Shards: 1, Handlers: []Handler{h}, Hooks: Hooks{
		OnStart:    func(context.Context, *Job) { hooks = append(hooks, "start") },
		OnComplete: func(context.Context, *Job, any) { hooks = append(hooks, "complete") },
		OnError:    func(context.Context, *Job, error, FailOutcome) { hooks = append(hooks, "error") },
	}})
	events, cancel := b.c.Subscribe(EventCompleted, EventRetried)
	defer cancel()
	claim := func() *Job {
		t.Helper()
		if _, err := b.c.Enqueue(b.ctx, "t.OK", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		jobs, err := b.c.Claim(b.ctx, "test", 1)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %v, %v; want one job", jobs, err)
		}
		return jobs[0]
	}
	if err := b.c.Complete(b.ctx, claim(), nil); err != nil {
		t.Fatal(err)
	}
	if out, err := b.c.Fail(b.ctx, claim(), errors.New("boom")); err != nil || out.Dead || out.RetryAt.IsZero() {
		t.Fatalf("Fail = %+v, %v; want a retry", out, err)
	}
	if _, err := b.c.Work(b.ctx, claim()); err != nil {
		t.Fatal(err)
	}
	var kinds []EventKind
	for _, e := range recv(t, events, 3) {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]EventKind{EventCompleted, EventRetried, EventCompleted}, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"start", "complete"}, hooks); diff != "" {
		t.Errorf("hooks (-want +got):\n%s", diff)
	}
}
