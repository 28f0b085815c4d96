package queuemax

import (
	"context"
	"errors"
	"testing"

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
