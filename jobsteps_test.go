package queuemax

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type receipt struct {
	ID     string            `json:"id"`
	Cents  int64             `json:"cents"`
	At     time.Time         `json:"at"`
	Meta   map[string]string `json:"meta"`
	Refund *int              `json:"refund"`
}

// stepBundle is a client with one order task of three job steps whose
// functions count their calls; step 3 fails for good while failEmail is set.
type stepBundle struct {
	*testBundle
	charges, ships, emails atomic.Int32
	failEmail              atomic.Bool
	got                    chan receipt
}

func setupSteps(t *testing.T, cfg Config) *stepBundle {
	t.Helper()
	sb := &stepBundle{got: make(chan receipt, 10)}
	want := receipt{ID: "r-1", Cents: 1250, At: time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC), Meta: map[string]string{"k": "v"}}
	cfg.Handlers = append(cfg.Handlers, Define("t.Order", TaskOptions{MaxRetries: Ptr(0)}, func(ctx context.Context, _ struct{}) error {
		r, err := Step(ctx, "charge", func(ctx context.Context) (receipt, error) {
			sb.charges.Add(1)
			return want, nil
		})
		if err != nil {
			return err
		}
		if err := Do(ctx, "ship", func(ctx context.Context) error { sb.ships.Add(1); return nil }); err != nil {
			return err
		}
		_, err = Step(ctx, "email", func(ctx context.Context) (string, error) {
			sb.emails.Add(1)
			if sb.failEmail.Load() {
				return "", Permanent(errors.New("mail server says no"))
			}
			return "sent", nil
		})
		if err == nil {
			sb.got <- r
		}
		return err
	}))
	if cfg.Store == nil {
		cfg.Shards = 1
	}
	sb.testBundle = setup(t, cfg)
	return sb
}

// workOnce claims the one ready job and works it.
func (sb *stepBundle) workOnce(t *testing.T) WorkResult {
	t.Helper()
	jobs, err := sb.c.Claim(sb.ctx, "test", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v; want one job", jobs, err)
	}
	res, err := sb.c.Work(sb.ctx, jobs[0])
	if err != nil {
		t.Fatalf("Work: %v", err)
	}
	return res
}

func (sb *stepBundle) calls() [3]int32 {
	return [3]int32{sb.charges.Load(), sb.ships.Load(), sb.emails.Load()}
}

// TestStep_RetryAfterPermanentFailureRerunsOnlyTheFailedStep: the third
// step fails for good, the job is dead-lettered; retried from the
// dead-letter queue it skips the first two steps, whose stored results
// come back unchanged, and runs only the third.
func TestStep_RetryAfterPermanentFailureRerunsOnlyTheFailedStep(t *testing.T) {
	t.Parallel()
	for _, requeue := range []string{"RetryJob", "RequeueDead"} {
		t.Run(requeue, func(t *testing.T) {
			t.Parallel()
			sb := setupSteps(t, Config{})
			sb.failEmail.Store(true)
			id, err := sb.c.Enqueue(sb.ctx, "t.Order", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			res := sb.workOnce(t)
			if res.Outcome != OutcomeDeadLettered || sb.calls() != [3]int32{1, 1, 1} {
				t.Fatalf("first run: outcome %s, calls %v; want dead-lettered after one call of each step", res.Outcome, sb.calls())
			}
			if diff := cmp.Diff([]string{"charge", "ship", "email"}, res.StepsRun); diff != "" {
				t.Errorf("first run StepsRun mismatch (-want +got):\n%s", diff)
			}
			j, err := sb.c.Job(sb.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range j.Steps {
				if s.Done {
					names = append(names, s.Name)
				}
			}
			if diff := cmp.Diff([]string{"charge", "ship"}, names); diff != "" {
				t.Errorf("Job.Steps done mismatch (-want +got):\n%s", diff)
			}
			sb.failEmail.Store(false)
			requeueJob(t, sb.testBundle, requeue, id)
			res = sb.workOnce(t)
			if res.Outcome != OutcomeCompleted || sb.calls() != [3]int32{1, 1, 2} {
				t.Fatalf("after %s: outcome %s (%v), calls %v; want completed with only the email step run again", requeue, res.Outcome, res.Err, sb.calls())
			}
			if diff := cmp.Diff([]string{"email"}, res.StepsRun); diff != "" {
				t.Errorf("second run StepsRun mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"charge", "ship"}, res.StepsSkipped); diff != "" {
				t.Errorf("second run StepsSkipped mismatch (-want +got):\n%s", diff)
			}
			want := receipt{ID: "r-1", Cents: 1250, At: time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC), Meta: map[string]string{"k": "v"}}
			if diff := cmp.Diff(want, <-sb.got); diff != "" {
				t.Errorf("stored charge result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func requeueJob(t *testing.T, b *testBundle, how string, id JobID) {
	t.Helper()
	switch how {
	case "RetryJob":
		if err := b.c.RetryJob(b.ctx, id); err != nil {
			t.Fatalf("RetryJob: %v", err)
		}
	case "RequeueDead":
		dl, err := b.c.DeadLetters(b.ctx, ListParams{})
		if err != nil || len(dl) != 1 {
			t.Fatalf("DeadLetters = %v, %v; want one", dl, err)
		}
		if got, err := b.c.RequeueDead(b.ctx, dl[0].Shard, dl[0].ID); err != nil || got != id {
			t.Fatalf("RequeueDead = %d, %v; want job %d", got, err, id)
		}
	}
}

// TestStep_RequeueClearsSteps: with Config.RequeueClearsSteps a job
// retried from the dead-letter queue runs every step again.
func TestStep_RequeueClearsSteps(t *testing.T) {
	t.Parallel()
	for _, requeue := range []string{"RetryJob", "RequeueDead"} {
		t.Run(requeue, func(t *testing.T) {
			t.Parallel()
			sb := setupSteps(t, Config{RequeueClearsSteps: true})
			sb.failEmail.Store(true)
			id, err := sb.c.Enqueue(sb.ctx, "t.Order", struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			sb.workOnce(t)
			sb.failEmail.Store(false)
			requeueJob(t, sb.testBundle, requeue, id)
			if res := sb.workOnce(t); res.Outcome != OutcomeCompleted || sb.calls() != [3]int32{2, 2, 2} {
				t.Fatalf("after %s: outcome %s, calls %v; want every step run again", requeue, res.Outcome, sb.calls())
			}
		})
	}
}

// TestStep_Cursor: a long iteration records its position; the attempt
// after a failure resumes from it, and each item is processed once.
func TestStep_Cursor(t *testing.T) {
	t.Parallel()
	var processed []int
	var failAt atomic.Int32
	failAt.Store(6)
	type pos struct{ Next int }
	b := setup(t, Config{Shards: 1, Handlers: []Handler{Define("t.Import", TaskOptions{}, func(ctx context.Context, _ struct{}) error {
		return Do(ctx, "import", func(ctx context.Context) error {
			p, ok, err := Cursor[pos](ctx)
			if err != nil {
				return err
			}
			if ok != (p.Next > 0) {
				t.Errorf("Cursor = %+v, %v; want found only after a recorded position", p, ok)
			}
			for i := p.Next; i < 10; i++ {
				if int32(i) == failAt.Load() {
					return RetryAfter(time.Nanosecond, errors.New("disk full")) // due at the next claim
				}
				processed = append(processed, i)
				if err := SetCursor(ctx, pos{i + 1}); err != nil {
					return err
				}
			}
			return nil
		})
	})}})
	id, err := b.c.Enqueue(b.ctx, "t.Import", struct{}{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	work := func() WorkResult {
		t.Helper()
		jobs, err := b.c.Claim(b.ctx, "test", 1)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %v, %v", jobs, err)
		}
		res, err := b.c.Work(b.ctx, jobs[0])
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := work(); res.Outcome != OutcomeRetry {
		t.Fatalf("first attempt: %s, want a retry", res.Outcome)
	}
	j, _ := b.c.Job(b.ctx, id)
	if len(j.Steps) != 1 || j.Steps[0].Done || string(j.Steps[0].Cursor) != `{"Next":6}` {
		t.Errorf("Job.Steps after the failure = %+v, want import at cursor {\"Next\":6}", j.Steps)
	}
	failAt.Store(-1)
	if res := work(); res.Outcome != OutcomeCompleted {
		t.Fatalf("second attempt: %s (%v), want completed", res.Outcome, res.Err)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, processed); diff != "" {
		t.Errorf("processed items mismatch (-want +got):\n%s", diff)
	}
}

// TestStep_Errors: a step outside a handler, a cursor outside a step, a
// duplicate name (naming both places), a bad name, a transaction on the
// SQLite store, and a write after the lease was lost.
func TestStep_Errors(t *testing.T) {
	t.Parallel()
	called := false
	if _, err := Step(t.Context(), "a", func(context.Context) (int, error) { called = true; return 1, nil }); !errors.Is(err, ErrStepOutsideJob) {
		t.Errorf("Step outside a handler error = %v, want ErrStepOutsideJob", err)
	}
	if err := Do(t.Context(), "a", func(context.Context) error { called = true; return nil }); !errors.Is(err, ErrStepOutsideJob) {
		t.Errorf("Do outside a handler error = %v, want ErrStepOutsideJob", err)
	}
	if called {
		t.Error("a step's function ran outside a handler")
	}
	if err := SetCursor(t.Context(), 1); !errors.Is(err, ErrStepOutsideJob) {
		t.Errorf("SetCursor outside a handler error = %v, want ErrStepOutsideJob", err)
	}

	errs := make(chan error, 10)
	release := make(chan struct{})
	b := setup(t, Config{Shards: 1, Handlers: []Handler{
		Define("t.Dup", TaskOptions{}, func(ctx context.Context, _ struct{}) error {
			if _, _, err := Cursor[int](ctx); !errors.Is(err, ErrStepOutsideJob) {
				t.Errorf("Cursor outside a step error = %v, want ErrStepOutsideJob", err)
			}
			if err := Do(ctx, "pay", func(context.Context) error { return nil }); err != nil {
				return err
			}
			err := Do(ctx, "pay", func(context.Context) error { t.Error("the duplicate step ran"); return nil })
			errs <- err
			return err
		}),
		Define("t.BadName", TaskOptions{}, func(ctx context.Context, _ struct{}) error {
			err := Do(ctx, `say "hi"`, func(context.Context) error { return nil })
			errs <- err
			return err
		}),
		Define("t.Tx", TaskOptions{}, func(ctx context.Context, _ struct{}) error {
			return Do(ctx, "tx", func(ctx context.Context) error {
				errs <- SetStepTx[any](ctx, struct{}{}, nil)
				return nil
			})
		}),
		Define("t.Lost", TaskOptions{}, func(ctx context.Context, _ struct{}) error {
			<-release
			err := Do(ctx, "late", func(context.Context) error { return nil })
			errs <- err
			return err
		}),
	}})
	work := func(task string) (*Job, WorkResult, error) {
		t.Helper()
		if _, err := b.c.Enqueue(b.ctx, task, struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		jobs, err := b.c.Claim(b.ctx, "test", 1)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %v, %v", jobs, err)
		}
		res, err := b.c.Work(b.ctx, jobs[0])
		return jobs[0], res, err
	}
	work("t.Dup")
	err := <-errs
	if !errors.Is(err, ErrDuplicateStep) || !regexp.MustCompile(`"pay" is used at jobsteps_test.go:\d+ and again at jobsteps_test.go:\d+`).MatchString(err.Error()) {
		t.Errorf("duplicate step error = %v, want ErrDuplicateStep naming both places", err)
	}
	work("t.BadName")
	if err := <-errs; !errors.Is(err, ErrInvalidStepName) || !strings.Contains(err.Error(), "double quote") {
		t.Errorf("bad step name error = %v, want ErrInvalidStepName saying why", err)
	}
	work("t.Tx")
	if err := <-errs; !errors.Is(err, ErrTxUnsupported) {
		t.Errorf("SetStepTx on SQLite error = %v, want ErrTxUnsupported", err)
	}

	// The job is taken back (released) while its handler runs: the step's
	// record is refused.
	if _, err := b.c.Enqueue(b.ctx, "t.Lost", struct{}{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.c.Claim(b.ctx, "test", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	done := make(chan error, 1)
	go func() { _, err := b.c.Work(b.ctx, jobs[0]); done <- err }()
	if err := b.c.Release(b.ctx, jobs[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.c.ResetJobSteps(b.ctx, jobs[0].ID, []JobStep{{Name: "x", Done: true, Result: []byte(`{`)}}); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("ResetJobSteps(bad JSON) error = %v, want one naming it", err)
	}
	close(release)
	if err := <-errs; !errors.Is(err, ErrLeaseLost) {
		t.Errorf("step after the lease was lost error = %v, want ErrLeaseLost", err)
	}
	if err := <-done; !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Work(released job) error = %v, want ErrLeaseLost", err)
	}
	if j := mustJob(t, b, jobs[0].ID); len(j.Steps) != 0 {
		t.Errorf("released job's steps = %+v, want none", j.Steps)
	}
}

// TestStep_InlineRetryAndSnooze: an in-process retry (TaskOptions.RetryOn)
// calls the handler again, which may use the same step names and skips the
// completed ones; so does the run after a snooze.
func TestStep_InlineRetryAndSnooze(t *testing.T) {
	t.Parallel()
	var calls, runs atomic.Int32
	transient := errors.New("transient")
	b := setup(t, Config{Shards: 1, Handlers: []Handler{
		Define("t.Flaky", TaskOptions{RetryOn: func(err error) bool { return errors.Is(err, transient) }, InlineRetries: 2},
			func(ctx context.Context, _ struct{}) error {
				n, err := Step(ctx, "count", func(context.Context) (int32, error) { return calls.Add(1), nil })
				if err != nil {
					return err
				}
				if r := runs.Add(1); r == 1 {
					return transient
				} else if r == 2 {
					return Snooze(0)
				}
				if n != 1 {
					t.Errorf("stored count = %d, want 1", n)
				}
				return nil
			}),
	}})
	if _, err := b.c.Enqueue(b.ctx, "t.Flaky", struct{}{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for range 2 {
		jobs, err := b.c.Claim(b.ctx, "test", 1)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %v, %v", jobs, err)
		}
		res, err := b.c.Work(b.ctx, jobs[0])
		if err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, res.Outcome)
	}
	if diff := cmp.Diff([]string{OutcomeSnoozed, OutcomeCompleted}, outcomes); diff != "" {
		t.Errorf("outcomes mismatch (-want +got):\n%s", diff)
	}
	if calls.Load() != 1 || runs.Load() != 3 {
		t.Errorf("step function calls = %d, handler runs = %d; want 1 and 3", calls.Load(), runs.Load())
	}
}

func mustJob(t *testing.T, b *testBundle, id JobID) *Job {
	t.Helper()
	j, err := b.c.Job(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestStep_SurvivesReopen: a job's step progress is in the store, not in
// the process: after the client that ran the first steps is closed (its
// store with it, as a process that stops or a restarted embedded store), a
// client on a store opened afresh over the same data runs only the step
// that failed, and gets the stored result of the first.
func TestStep_SurvivesReopen(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, cfg Config) {
		first := setupSteps(t, cfg)
		first.failEmail.Store(true)
		id, err := first.c.Enqueue(first.ctx, "t.Order", struct{}{}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		if res := first.workOnce(t); res.Outcome != OutcomeDeadLettered || first.calls() != [3]int32{1, 1, 1} {
			t.Fatalf("first run: outcome %s, calls %v; want dead-lettered after one call of each step", res.Outcome, first.calls())
		}
		if err := first.c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		second := setupSteps(t, cfg)
		requeueJob(t, second.testBundle, "RetryJob", id)
		res := second.workOnce(t)
		if res.Outcome != OutcomeCompleted || second.calls() != [3]int32{0, 0, 1} {
			t.Fatalf("after reopening: outcome %s (%v), calls %v; want completed with only the email step run", res.Outcome, res.Err, second.calls())
		}
		want := receipt{ID: "r-1", Cents: 1250, At: time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC), Meta: map[string]string{"k": "v"}}
		if diff := cmp.Diff(want, <-second.got); diff != "" {
			t.Errorf("stored charge result after reopening mismatch (-want +got):\n%s", diff)
		}
	}
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		run(t, Config{Dir: t.TempDir()})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		run(t, Config{Store: newPGTarget(t)})
	})
}
