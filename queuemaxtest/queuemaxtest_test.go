package queuemaxtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
)

var backends = []string{"SQLite", "PostgreSQL"}

// pgStore opens the PostgreSQL store on a fresh schema of the test
// database. It is nil here: this module does not require the store's;
// queuemaxpg's TestOverlaid runs these tests with a file that sets it.
var pgStore func(t *testing.T) queuemax.Store

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB records failures instead of failing the test; Fatalf ends the
// goroutine, as testing.T's does. The methods the helpers use that do not
// report failures go to the real test.
type fakeTB struct {
	testing.TB // nil: a method not overridden here panics
	t          *testing.T

	mu     sync.Mutex
	failed bool
	msgs   []string
}

func (f *fakeTB) Helper()                      {}
func (f *fakeTB) TempDir() string              { return f.t.TempDir() }
func (f *fakeTB) Context() context.Context     { return f.t.Context() }
func (f *fakeTB) Output() io.Writer            { return f.t.Output() }
func (f *fakeTB) Cleanup(fn func())            { f.t.Cleanup(fn) }
func (f *fakeTB) Logf(format string, a ...any) { f.t.Logf(format, a...) }
func (f *fakeTB) Errorf(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, a...))
}
func (f *fakeTB) Fatalf(format string, a ...any) {
	f.Errorf(format, a...)
	runtime.Goexit()
}

// fails runs fn with a fake TB and requires that it failed with a message
// containing every string of want.
func fails(t *testing.T, fn func(tb testing.TB), want ...string) {
	t.Helper()
	f := passOrFail(t, fn)
	if !f.failed {
		t.Fatalf("helper passed; want it to fail with %q", want)
	}
	msg := strings.Join(f.msgs, "\n")
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("failure message lacks %q:\n%s", w, msg)
		}
	}
}

// passes runs fn with a fake TB and requires that it did not fail.
func passes(t *testing.T, fn func(tb testing.TB)) {
	t.Helper()
	if f := passOrFail(t, fn); f.failed {
		t.Fatalf("helper failed: %s", strings.Join(f.msgs, "\n"))
	}
}

func passOrFail(t *testing.T, fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{t: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

type emailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

type depsKey struct{}

type bundle struct {
	c    *queuemax.Client
	ctx  context.Context
	mu   sync.Mutex
	sent []string // emails "sent" by the send handler
}

// setup opens a client with the tasks t.Send (emailArgs), t.Welcome
// (enqueues a t.Send), t.Flaky (fails once, with a retry due in an hour),
// t.Nap (snoozes for zero once) and t.Forever (always snoozes for zero).
//
// backend is "SQLite" or "PostgreSQL" (a schema of its own).
func setup(t *testing.T, backend string) *bundle {
	t.Helper()
	b := &bundle{ctx: t.Context()}
	var flaky, nap sync.Map
	handlers := []queuemax.Handler{
		queuemax.Define("t.Send", queuemax.TaskOptions{Priority: queuemax.PriorityHigh}, func(_ context.Context, a emailArgs) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.sent = append(b.sent, a.To)
			return nil
		}),
		queuemax.Define("t.Welcome", queuemax.TaskOptions{}, func(ctx context.Context, a struct {
			User string `json:"user"`
		}) error {
			_, err := b.c.Enqueue(ctx, "t.Send", emailArgs{To: a.User, Subject: "Welcome"}, queuemax.Opts{})
			return err
		}),
		{Name: "t.Flaky", Func: func(_ context.Context, j *queuemax.Job) (any, error) {
			if _, again := flaky.LoadOrStore(j.ID, true); !again {
				return nil, queuemax.RetryAfter(time.Hour, errors.New("busy"))
			}
			return "ok", nil
		}},
		{Name: "t.Nap", Func: func(_ context.Context, j *queuemax.Job) (any, error) {
			if _, again := nap.LoadOrStore(j.ID, true); !again {
				return nil, queuemax.Snooze(0)
			}
			return nil, nil
		}},
		{Name: "t.Forever", Func: func(context.Context, *queuemax.Job) (any, error) { return nil, queuemax.Snooze(0) }},
		{Name: "t.Deps", Func: func(ctx context.Context, _ *queuemax.Job) (any, error) {
			if ctx.Value(depsKey{}) != "deps" {
				return nil, queuemax.Permanent(errors.New("no deps in context"))
			}
			return nil, nil
		}},
	}
	cfg := queuemax.Config{Handlers: handlers, Shards: 2, MaxSnoozes: 1000, AllowUnknownTasks: true}
	if backend == "PostgreSQL" {
		if pgStore == nil {
			t.Skip("the PostgreSQL store is not linked into this test binary (its module, queuemaxpg, runs these cases: go test -run TestOverlaid ./queuemaxpg)")
		}
		cfg.Store = pgStore(t)
		cfg.Shards = 0
	}
	b.c = queuemaxtest.NewClient(t, cfg)
	return b
}

func (b *bundle) enqueue(t *testing.T, task string, payload any, o queuemax.Opts) queuemax.JobID {
	t.Helper()
	id, err := b.c.Enqueue(b.ctx, task, payload, o)
	if err != nil {
		t.Fatalf("Enqueue(%s): %v", task, err)
	}
	return id
}

func TestNewClient(t *testing.T) {
	t.Parallel()
	var c *queuemax.Client
	t.Run("Open", func(t *testing.T) {
		c = queuemaxtest.NewClient(t, queuemax.Config{AllowUnknownTasks: true})
		if c.Dir() == "" {
			t.Error("client has no directory")
		}
		if _, err := c.Enqueue(t.Context(), "t.X", struct{}{}, queuemax.Opts{}); err != nil {
			t.Errorf("Enqueue: %v", err)
		}
	})
	if _, err := c.Enqueue(t.Context(), "t.X", struct{}{}, queuemax.Opts{}); !errors.Is(err, queuemax.ErrClosed) {
		t.Errorf("Enqueue after the subtest's cleanup = %v, want ErrClosed", err)
	}
	t.Run("OpenFails", func(t *testing.T) {
		fails(t, func(tb testing.TB) { queuemaxtest.NewClient(tb, queuemax.Config{Shards: -1}) }, "queuemaxtest.NewClient", "Shards")
	})
}

func TestRequireEnqueued(t *testing.T) {
	t.Parallel()
	b := setup(t, "SQLite")
	ada := b.enqueue(t, "t.Send", emailArgs{To: "ada@example.com", Subject: "Hi"}, queuemax.Opts{})
	b.enqueue(t, "t.Send", emailArgs{To: "bob@example.com", Subject: "Hi"}, queuemax.Opts{Priority: queuemax.Ptr(queuemax.PriorityLow), Tags: []string{"vip", "eu"}})
	later := b.enqueue(t, "t.Send", emailArgs{To: "cy@example.com", Subject: "Later"}, queuemax.Opts{RunAt: time.Now().Add(time.Hour)})

	t.Run("ReturnsTheDecodedArgs", func(t *testing.T) {
		t.Parallel()
		var got *queuemaxtest.Job[emailArgs]
		passes(t, func(tb testing.TB) {
			got = queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Args: emailArgs{To: "ada@example.com", Subject: "Hi"}})
		})
		if got.ID != ada || got.Args != (emailArgs{To: "ada@example.com", Subject: "Hi"}) || got.Task != "t.Send" {
			t.Errorf("RequireEnqueued = job %d %s %+v, want job %d with ada's args", got.ID, got.Task, got.Args, ada)
		}
	})
	t.Run("MatchesPriorityAndScheduled", func(t *testing.T) {
		t.Parallel()
		passes(t, func(tb testing.TB) {
			j := queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Priority: queuemax.Ptr(queuemax.PriorityLow)})
			if j.Args.To != "bob@example.com" {
				tb.Errorf("priority low matched %+v, want bob's job", j.Args)
			}
			j = queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Args: &emailArgs{To: "cy@example.com", Subject: "Later"}})
			if j.ID != later || j.Status != queuemax.StatusScheduled {
				tb.Errorf("matched job %d (%s), want scheduled job %d", j.ID, j.Status, later)
			}
			queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Match: func(j *queuemax.Job) bool { return j.IsScheduled() }})
			if j := queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Tags: []string{"eu"}}); j.Args.To != "bob@example.com" {
				tb.Errorf("tag eu matched %+v, want bob's job", j.Args)
			}
		})
	})
	t.Run("FailsWhenNoneMatches", func(t *testing.T) {
		t.Parallel()
		fails(t, func(tb testing.TB) {
			queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Args: emailArgs{To: "dee@example.com"}})
		}, "RequireEnqueued[queuemaxtest_test.emailArgs]", "no waiting job of t.Send matches", "dee@example.com", "ada@example.com")
	})
	t.Run("FailsWhenATagIsMissing", func(t *testing.T) {
		t.Parallel()
		fails(t, func(tb testing.TB) {
			queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Tags: []string{"vip", "us"}})
		}, `tags ["vip" "us"]`, "no waiting job")
	})
	t.Run("MatchesTheQueue", func(t *testing.T) {
		t.Parallel()
		fails(t, func(tb testing.TB) {
			queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Queue: "emails"})
		}, `queue "emails"`, "no waiting job")
		fails(t, func(tb testing.TB) {
			queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Queue: queuemax.DefaultQueue})
		}, `3 waiting jobs of t.Send match queue "default", want exactly one`)
	})
	t.Run("FailsWhenSeveralMatch", func(t *testing.T) {
		t.Parallel()
		fails(t, func(tb testing.TB) { queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, nil) },
			"3 waiting jobs of t.Send match, want exactly one")
	})
	t.Run("FailsWithoutATypedTask", func(t *testing.T) {
		t.Parallel()
		fails(t, func(tb testing.TB) { queuemaxtest.RequireEnqueued[struct{ N int }](tb, b.c, nil) },
			"no task whose payload type is struct { N int }", "RequireOpts.Task")
	})
	t.Run("FailsOnArgsOfAnotherType", func(t *testing.T) {
		t.Parallel()
		fails(t, func(tb testing.TB) {
			queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Args: "ada@example.com"})
		}, "RequireOpts.Args is a string")
	})
	t.Run("FailsOnAPayloadThatDoesNotDecode", func(t *testing.T) {
		t.Parallel()
		c := queuemaxtest.NewClient(t, queuemax.Config{AllowUnknownTasks: true})
		if _, err := c.Enqueue(t.Context(), "t.Raw", map[string]any{"to": 1}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
		fails(t, func(tb testing.TB) {
			queuemaxtest.RequireEnqueued[emailArgs](tb, c, &queuemaxtest.RequireOpts{Task: "t.Raw"})
		}, "job", "t.Raw")
	})
}

func TestRequireNotEnqueued(t *testing.T) {
	t.Parallel()
	b := setup(t, "PostgreSQL")
	b.enqueue(t, "t.Send", emailArgs{To: "ada@example.com"}, queuemax.Opts{})
	passes(t, func(tb testing.TB) {
		queuemaxtest.RequireNotEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Args: emailArgs{To: "bob@example.com"}})
		queuemaxtest.RequireNotEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Priority: queuemax.Ptr(queuemax.PriorityLow)})
	})
	fails(t, func(tb testing.TB) { queuemaxtest.RequireNotEnqueued[emailArgs](tb, b.c, nil) },
		"RequireNotEnqueued", "1 waiting jobs of t.Send match, want none", "ada@example.com")
}

func TestDrain(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testDrain(t, setup(t, backend))
		})
	}
}

func testDrain(t *testing.T, b *bundle) {
	welcome := b.enqueue(t, "t.Welcome", map[string]string{"user": "ada@example.com"}, queuemax.Opts{})
	flaky := b.enqueue(t, "t.Flaky", struct{}{}, queuemax.Opts{})
	nap := b.enqueue(t, "t.Nap", struct{}{}, queuemax.Opts{})
	b.enqueue(t, "t.Send", emailArgs{To: "later@example.com"}, queuemax.Opts{RunAt: time.Now().Add(time.Hour)})

	var worked []queuemaxtest.Worked
	passes(t, func(tb testing.TB) { worked = queuemaxtest.Drain(tb, b.c) })
	type run struct {
		Task, Outcome string
		Attempt       int
	}
	var got []run
	outcomes := map[queuemax.JobID][]string{}
	for _, w := range worked {
		got = append(got, run{w.Job.Task, w.Outcome, w.Job.Attempts})
		outcomes[w.Job.ID] = append(outcomes[w.Job.ID], w.Outcome)
	}
	// Every ready job ran, including the t.Send the welcome enqueued and
	// the snoozed t.Nap's second run; the retry due in an hour and the
	// scheduled t.Send did not.
	if len(got) != 5 {
		t.Fatalf("Drain ran %d executions, want 5: %+v", len(got), got)
	}
	for id, want := range map[queuemax.JobID][]string{welcome: {"completed"}, flaky: {"retry"}, nap: {"snoozed", "completed"}} {
		if diff := cmp.Diff(want, outcomes[id]); diff != "" {
			t.Errorf("job %d outcomes mismatch (-want +got):\n%s", id, diff)
		}
	}
	if diff := cmp.Diff([]string{"ada@example.com"}, b.sent); diff != "" {
		t.Errorf("emails sent mismatch (-want +got):\n%s", diff)
	}
	for _, w := range worked {
		if w.Job.ID == flaky && (w.RetryAt.Before(time.Now().Add(50*time.Minute)) || w.Err == nil) {
			t.Errorf("t.Flaky result %+v, want a retry due in about an hour with its error", w.WorkResult)
		}
	}
	// Nothing is ready now: a second Drain runs nothing.
	passes(t, func(tb testing.TB) {
		if again := queuemaxtest.Drain(tb, b.c); len(again) != 0 {
			tb.Errorf("second Drain ran %d executions, want none", len(again))
		}
	})
	passes(t, func(tb testing.TB) {
		queuemaxtest.RequireEnqueued[emailArgs](tb, b.c, &queuemaxtest.RequireOpts{Args: emailArgs{To: "later@example.com"}})
	})

	t.Run("FailsOnAnEndlessJob", func(t *testing.T) {
		forever := b.enqueue(t, "t.Forever", struct{}{}, queuemax.Opts{})
		fails(t, func(tb testing.TB) { queuemaxtest.DrainWith(tb, b.c, &queuemaxtest.WorkOpts{MaxDrain: 5}) },
			"still jobs ready after 5 executions", "t.Forever")
		// The job Drain claimed last was put back, not left processing.
		j, err := b.c.Job(b.ctx, forever)
		if err != nil || j.Status != queuemax.StatusPending {
			t.Errorf("job after the failed Drain = %+v, %v; want pending", j, err)
		}
		if _, err := b.c.Cancel(b.ctx, forever); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWorkOne(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testWorkOne(t, setup(t, backend))
		})
	}
}

func testWorkOne(t *testing.T, b *bundle) {
	first := b.enqueue(t, "t.Send", emailArgs{To: "first@example.com"}, queuemax.Opts{})
	second := b.enqueue(t, "t.Send", emailArgs{To: "second@example.com"}, queuemax.Opts{})
	third := b.enqueue(t, "t.Send", emailArgs{To: "third@example.com"}, queuemax.Opts{})

	var w queuemaxtest.Worked
	passes(t, func(tb testing.TB) { w = queuemaxtest.WorkOne(tb, b.c, second) })
	if w.Job.ID != second || w.Outcome != queuemax.OutcomeCompleted || w.Job.Attempts != 1 {
		t.Errorf("WorkOne = job %d %s attempt %d, want job %d completed on attempt 1", w.Job.ID, w.Outcome, w.Job.Attempts, second)
	}
	if diff := cmp.Diff([]string{"second@example.com"}, b.sent); diff != "" {
		t.Errorf("emails sent mismatch (-want +got):\n%s", diff)
	}
	// The jobs claimed on the way are back as they were.
	for _, id := range []queuemax.JobID{first, third} {
		j, err := b.c.Job(b.ctx, id)
		if err != nil || j.Status != queuemax.StatusPending || j.Attempts != 0 || j.WorkerID != "" {
			t.Errorf("job %d after WorkOne = %+v, %v; want pending with no attempt", id, j, err)
		}
	}

	t.Run("HandlerGetsTheGivenContext", func(t *testing.T) {
		id := b.enqueue(t, "t.Deps", struct{}{}, queuemax.Opts{})
		passes(t, func(tb testing.TB) {
			if w := queuemaxtest.WorkOne(tb, b.c, id); w.Outcome != queuemax.OutcomeDeadLettered {
				tb.Errorf("WorkOne without deps = %s, want dead_lettered", w.Outcome)
			}
		})
		id = b.enqueue(t, "t.Deps", struct{}{}, queuemax.Opts{})
		ctx := context.WithValue(t.Context(), depsKey{}, "deps")
		passes(t, func(tb testing.TB) {
			if w := queuemaxtest.WorkOneWith(tb, b.c, id, &queuemaxtest.WorkOpts{Context: ctx}); w.Outcome != queuemax.OutcomeCompleted {
				tb.Errorf("WorkOneWith(deps) = %s %v, want completed", w.Outcome, w.Err)
			}
		})
		id = b.enqueue(t, "t.Deps", struct{}{}, queuemax.Opts{})
		passes(t, func(tb testing.TB) {
			ws := queuemaxtest.DrainWith(tb, b.c, &queuemaxtest.WorkOpts{Context: ctx})
			if len(ws) != 3 { // t.Deps, and the first and third t.Send
				tb.Errorf("DrainWith ran %d jobs, want 3", len(ws))
			}
			for _, w := range ws {
				if w.Outcome != queuemax.OutcomeCompleted {
					tb.Errorf("DrainWith(deps): job %d %s %s: %v", w.Job.ID, w.Job.Task, w.Outcome, w.Err)
				}
			}
		})
	})
	t.Run("FailsOnAJobNotReady", func(t *testing.T) {
		later := b.enqueue(t, "t.Send", emailArgs{To: "later@example.com"}, queuemax.Opts{RunAt: time.Now().Add(time.Hour)})
		fails(t, func(tb testing.TB) { queuemaxtest.WorkOne(tb, b.c, later) }, fmt.Sprintf("WorkOne(%d)", later), "scheduled, not ready until")
	})
	t.Run("FailsOnAFinishedJob", func(t *testing.T) {
		fails(t, func(tb testing.TB) { queuemaxtest.WorkOne(tb, b.c, second) }, fmt.Sprintf("WorkOne(%d)", second))
	})
	t.Run("FailsOnATaskWithoutHandler", func(t *testing.T) {
		raw := b.enqueue(t, "t.Unknown", struct{}{}, queuemax.Opts{})
		fails(t, func(tb testing.TB) { queuemaxtest.WorkOne(tb, b.c, raw) }, "no handler for task \"t.Unknown\"")
	})
}

// TestDrain_KeepsCompletedUnderRetention: Drain finishes jobs as Run does,
// so under Config.CompletedRetention its completed jobs stay stored as
// completed (they used to be deleted).
func TestDrain_KeepsCompletedUnderRetention(t *testing.T) {
	t.Parallel()
	h := queuemax.Define("t.OK", queuemax.TaskOptions{}, func(context.Context, struct{}) error { return nil })
	c := queuemaxtest.NewClient(t, queuemax.Config{Handlers: []queuemax.Handler{h}, CompletedRetention: time.Hour})
	id, err := c.Enqueue(t.Context(), "t.OK", struct{}{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if w := queuemaxtest.Drain(t, c); len(w) != 1 || w[0].Outcome != queuemax.OutcomeCompleted {
		t.Fatalf("Drain = %+v, want one completion", w)
	}
	if j, err := c.Job(t.Context(), id); err != nil || j.Status != queuemax.StatusCompleted {
		t.Errorf("Job = %+v, %v; want kept as completed", j, err)
	}
}
