package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

type httpErr struct{ code int }

func (e httpErr) Error() string   { return fmt.Sprintf("http %d", e.code) }
func (e httpErr) StatusCode() int { return e.code }

func handle(f func(ctx context.Context, j *store.Job) (any, error)) *Handler {
	return &Handler{Func: f}
}

// TestRun_RetriesWithBackoffThenDeadLetters: a retryable failure is
// retried after the task's backoff until the attempts are spent, then
// dead-lettered.
func TestRun_RetriesWithBackoffThenDeadLetters(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	h := handle(func(context.Context, *store.Job) (any, error) { calls.Add(1); return nil, httpErr{503} })
	l := newLive(t, map[string]*Handler{"t.Fail": h})
	l.start()
	ids, err := l.st.Insert(t.Context(), []store.InsertParams{{Task: "t.Fail", Payload: []byte(`{}`), MaxAttempts: 3,
		RetryDelay: 5 * time.Millisecond, Now: time.Now().UTC()}})
	if err != nil {
		t.Fatal(err)
	}
	id := ids[0]
	got := l.wait(3, queuemaxtype.EventRetried, queuemaxtype.EventFailed)
	kinds := []EventKind{got[0].Kind, got[1].Kind, got[2].Kind}
	if fmt.Sprint(kinds) != fmt.Sprint([]EventKind{queuemaxtype.EventRetried, queuemaxtype.EventRetried, queuemaxtype.EventFailed}) {
		t.Errorf("events = %v, want retried, retried, failed", kinds)
	}
	if got[2].Attempt != 3 || got[2].Error != "http 503" || got[2].JobID != id {
		t.Errorf("failed event = %+v, want attempt 3 of job %d", got[2], id)
	}
	if d := got[0].RetryAt.Sub(got[0].Time); d > 6*time.Millisecond {
		t.Errorf("first retry %v after the failure; want the stored 5ms backoff base (±20%%), not ExecConfig's 1s", d)
	}
	j := l.job(id)
	if j.Status != store.StatusFailed || j.Attempts != 3 || j.ErrorType != "engine.httpErr" {
		t.Errorf("job = %s attempts=%d type=%s, want failed after 3 attempts", j.Status, j.Attempts, j.ErrorType)
	}
	if dl, err := l.st.DeadLetters(t.Context(), store.ListParams{}); err != nil || len(dl) != 1 || dl[0].OriginalJobID != id {
		t.Errorf("dead letters = %+v, %v; want one for job %d", dl, err, id)
	}
	if calls.Load() != 3 {
		t.Errorf("handler calls = %d, want 3", calls.Load())
	}
}

// TestRun_PermanentErrorsSkipRetries: a permanent error, or an HTTP
// client error, dead-letters on the first attempt.
func TestRun_PermanentErrorsSkipRetries(t *testing.T) {
	t.Parallel()
	h := handle(func(_ context.Context, j *store.Job) (any, error) {
		if string(j.Payload) == `{"n":0}` {
			return nil, httpErr{404}
		}
		return nil, queuemaxtype.Permanent(errors.New("bad input"))
	})
	l := newLive(t, map[string]*Handler{"t.P": h})
	l.start()
	l.enqueue("t.P", `{"n":0}`, 6)
	l.enqueue("t.P", `{"n":1}`, 6)
	for _, e := range l.wait(2, queuemaxtype.EventRetried, queuemaxtype.EventFailed) {
		if e.Kind != queuemaxtype.EventFailed || e.Attempt != 1 {
			t.Errorf("event = %+v, want failed on attempt 1", e)
		}
	}
}

// TestRun_PanicIsRecordedWithStack: a handler's panic fails the attempt
// with a *PanicError and its stack.
func TestRun_PanicIsRecordedWithStack(t *testing.T) {
	t.Parallel()
	l := newLive(t, map[string]*Handler{"t.Panic": handle(func(context.Context, *store.Job) (any, error) { panic("kaboom") })})
	l.start()
	id := l.enqueue("t.Panic", `{}`, 1)
	l.wait(1, queuemaxtype.EventFailed)
	j := l.job(id)
	if j.LastError != "panic: kaboom" || j.ErrorType != "*queuemax.PanicError" || !strings.Contains(j.ErrorStack, "run_test.go") {
		t.Errorf("job error = %q %q stack=%q", j.LastError, j.ErrorType, j.ErrorStack)
	}
}

// TestRun_TimeoutCancelsHandler: the task's timeout cancels the handler's
// context and records a timeout.
func TestRun_TimeoutCancelsHandler(t *testing.T) {
	t.Parallel()
	h := handle(func(ctx context.Context, _ *store.Job) (any, error) { <-ctx.Done(); return nil, ctx.Err() })
	h.Timeout = 20 * time.Millisecond
	l := newLive(t, map[string]*Handler{"t.Slow": h})
	l.start()
	id := l.enqueue("t.Slow", `{}`, 1)
	l.wait(1, queuemaxtype.EventFailed)
	if j := l.job(id); !strings.Contains(j.LastError, "job exceeded 20ms timeout") {
		t.Errorf("last error = %q, want a timeout", j.LastError)
	}
}

// TestRun_DrainLetsRunningJobsFinish: Stop waits for a running job that
// ends within the drain, and records it.
func TestRun_DrainLetsRunningJobsFinish(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	l := newLive(t, map[string]*Handler{"t.Wait": handle(func(context.Context, *store.Job) (any, error) {
		close(started)
		<-release
		return nil, nil
	})})
	l.exec.KeepCompleted = true
	l.start()
	id := l.enqueue("t.Wait", `{}`, 1)
	<-started
	stopped := make(chan struct{})
	go func() { l.stop(); close(stopped) }()
	close(release)
	<-stopped
	if j := l.job(id); j.Status != store.StatusCompleted {
		t.Errorf("job after drain: %s; want completed", j.Status)
	}
}

// TestRun_DrainTimeoutReturnsJobsToPending: a job still running at the
// end of the drain goes back to pending with its attempt refunded.
func TestRun_DrainTimeoutReturnsJobsToPending(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	l := newLive(t, map[string]*Handler{"t.Stuck": handle(func(ctx context.Context, _ *store.Job) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})})
	l.cfg.DrainTimeout = 10 * time.Millisecond
	l.start()
	id := l.enqueue("t.Stuck", `{}`, 1)
	<-started
	l.stop()
	if j := l.job(id); j.Status != store.StatusPending || j.Attempts != 0 {
		t.Errorf("job after drain timeout = %s, %d attempts; want pending with its attempt refunded", j.Status, j.Attempts)
	}
}

// TestRun_AckBatch covers the acknowledgements of the jobs one claim
// started at once: they commit together, a slow job of the batch does not
// hold back the others' acknowledgements, and a failing job of the batch
// is recorded on its own.
func TestRun_AckBatch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	l := newLive(t, map[string]*Handler{
		"t.Ok":  handle(func(context.Context, *store.Job) (any, error) { return map[string]int{"ok": 1}, nil }),
		"t.Bad": handle(func(context.Context, *store.Job) (any, error) { return nil, queuemaxtype.Permanent(errors.New("bad")) }),
		"t.Slow": handle(func(ctx context.Context, _ *store.Job) (any, error) {
			select {
			case <-release:
				return nil, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}),
	})
	ps := []store.InsertParams{{Task: "t.Slow"}, {Task: "t.Bad"}}
	for range 6 {
		ps = append(ps, store.InsertParams{Task: "t.Ok"})
	}
	for i := range ps {
		ps[i].Payload, ps[i].MaxAttempts, ps[i].Now = []byte(`{}`), 1, time.Now().UTC()
	}
	if _, err := l.st.Insert(t.Context(), ps); err != nil {
		t.Fatal(err)
	}
	l.start()
	// The slow job is still running: the others' acknowledgements must
	// commit anyway.
	for _, ev := range l.wait(6, queuemaxtype.EventCompleted) {
		if ev.Task != "t.Ok" {
			t.Errorf("completed %q before the slow job was released", ev.Task)
		}
	}
	close(release)
	if ev := l.wait(1, queuemaxtype.EventCompleted); ev[0].Task != "t.Slow" {
		t.Errorf("completed %q, want t.Slow", ev[0].Task)
	}
	l.stop()
	ss, err := l.st.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s := ss[0]; s.TotalProcessed != 7 || s.TotalFailed != 1 || s.Pending != 0 || s.Processing != 0 {
		t.Errorf("stats: processed %d, failed %d, pending %d, processing %d; want 7, 1, 0, 0",
			s.TotalProcessed, s.TotalFailed, s.Pending, s.Processing)
	}
	if ws := l.e.Stats(); ws.Processed != 7 || ws.Failed != 1 || ws.LeaseLost != 0 {
		t.Errorf("engine stats: processed %d, failed %d, lease lost %d; want 7, 1, 0", ws.Processed, ws.Failed, ws.LeaseLost)
	}
}

// TestRun_Snooze: a snooze runs the job again after its delay without
// spending an attempt; past MaxSnoozes the job is dead-lettered, saying
// why.
func TestRun_Snooze(t *testing.T) {
	t.Parallel()
	var runs, forever atomic.Int64
	l := newLive(t, map[string]*Handler{
		"t.Wait": handle(func(context.Context, *store.Job) (any, error) {
			if n := runs.Add(1); n <= 2 {
				return nil, queuemaxtype.Snooze(10 * time.Millisecond)
			}
			return runs.Load(), nil
		}),
		"t.Loop": handle(func(context.Context, *store.Job) (any, error) { forever.Add(1); return nil, queuemaxtype.Snooze(0) }),
	})
	l.exec.MaxSnoozes = 3
	l.start()
	end := []EventKind{queuemaxtype.EventCompleted, queuemaxtype.EventFailed}
	id := l.enqueue("t.Wait", `{}`, 1)
	if e := l.wait(1, end...)[0]; e.Kind != queuemaxtype.EventCompleted || e.JobID != id {
		t.Fatalf("event %+v; want job_completed for %d", e, id)
	}
	if j := l.job(id); j.Snoozes != 2 || j.Attempts != 1 || string(j.Result) != "3" {
		t.Fatalf("job = %+v; want completed after 2 snoozes, 1 attempt, result 3", j)
	}
	id = l.enqueue("t.Loop", `{}`, 6)
	if e := l.wait(1, end...)[0]; e.Kind != queuemaxtype.EventFailed || e.JobID != id {
		t.Fatalf("event %+v; want job_failed for %d", e, id)
	}
	j := l.job(id)
	if n := forever.Load(); n != 4 || j.Snoozes != 3 || j.Attempts != 1 || !strings.Contains(j.LastError, "snoozed 4 times") ||
		!strings.Contains(j.LastError, "MaxSnoozes = 3") {
		t.Errorf("runs %d, job %+v; want 4 runs, 3 snoozes, 1 attempt, a snooze-limit error", n, j)
	}
}

// TestRun_OnlyItsTasksAreClaimed: the engine claims the jobs of its own
// tasks and leaves the others to the processes that run them.
func TestRun_OnlyItsTasksAreClaimed(t *testing.T) {
	t.Parallel()
	l := newLive(t, map[string]*Handler{"t.Mine": handle(func(context.Context, *store.Job) (any, error) { return nil, nil })})
	l.start()
	other := l.enqueue("t.Theirs", `{}`, 1)
	l.enqueue("t.Mine", `{}`, 1)
	l.wait(1, queuemaxtype.EventCompleted)
	l.stop()
	if j := l.job(other); j.Status != store.StatusPending || j.Attempts != 0 {
		t.Errorf("foreign task's job = %s, %d attempts; want untouched", j.Status, j.Attempts)
	}
}

// TestRun_ScheduledJobsWaitForRunAt: a job with a run-at time in the
// future is not started before it.
func TestRun_ScheduledJobsWaitForRunAt(t *testing.T) {
	t.Parallel()
	var ranAt atomic.Int64
	l := newLive(t, map[string]*Handler{"t.Later": handle(func(context.Context, *store.Job) (any, error) {
		ranAt.Store(time.Now().UnixNano())
		return nil, nil
	})})
	l.start()
	at := time.Now().Add(150 * time.Millisecond)
	if _, err := l.st.Insert(t.Context(), []store.InsertParams{{Task: "t.Later", Payload: []byte(`{}`), MaxAttempts: 1,
		RunAt: at, Now: time.Now().UTC()}}); err != nil {
		t.Fatal(err)
	}
	l.wait(1, queuemaxtype.EventCompleted)
	if ran := time.Unix(0, ranAt.Load()); ran.Before(at) {
		t.Errorf("job ran at %v, before its run-at %v", ran, at)
	}
}

// TestRun_TimeoutWhenHandlerIgnoresItsContext: an attempt that outlives
// its timeout is a retryable timeout even when the handler ignores its
// context and returns success: it is retried, then dead-lettered, never
// recorded completed.
func TestRun_TimeoutWhenHandlerIgnoresItsContext(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	h := handle(func(ctx context.Context, _ *store.Job) (any, error) {
		calls.Add(1)
		<-ctx.Done() // past the deadline, then claims success
		return "done", nil
	})
	h.Timeout = 50 * time.Millisecond
	l := newLive(t, map[string]*Handler{"t.Stubborn": h})
	l.start()
	ids, err := l.st.Insert(t.Context(), []store.InsertParams{{Task: "t.Stubborn", Payload: []byte(`{}`), MaxAttempts: 2,
		RetryDelay: time.Millisecond, Now: time.Now().UTC()}})
	if err != nil {
		t.Fatal(err)
	}
	if e := l.wait(1, queuemaxtype.EventFailed, queuemaxtype.EventCompleted)[0]; e.Kind != queuemaxtype.EventFailed || e.JobID != ids[0] {
		t.Fatalf("event %+v, want job %d failed", e, ids[0])
	}
	if j := l.job(ids[0]); j.Status != store.StatusFailed || !strings.Contains(j.LastError, "exceeded 50ms timeout") || j.Result != nil {
		t.Errorf("job = %s %q result %s; want failed with the 50ms timeout, no result", j.Status, j.LastError, j.Result)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2 (the timeout is retryable)", n)
	}
}
