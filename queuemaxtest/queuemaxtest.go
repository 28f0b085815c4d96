// Package queuemaxtest helps test code that enqueues and works queuemax
// jobs, in the manner of River's rivertest: open a client on a temporary
// store, assert that a typed job was (or was not) enqueued, and work jobs
// synchronously, in the test's goroutine, with no sleeps.
//
//	func TestSignup(t *testing.T) {
//		c := queuemaxtest.NewClient(t, queuemax.Config{Handlers: tasks.Handlers()})
//		if err := signup(t.Context(), tasks.New(c), "ada@example.com"); err != nil {
//			t.Fatal(err)
//		}
//		job := queuemaxtest.RequireEnqueued[tasks.SendEmailArgs](t, c, nil)
//		if job.Args.To != "ada@example.com" { ... }
//		for _, w := range queuemaxtest.Drain(t, c) {
//			if w.Outcome != queuemax.OutcomeCompleted { t.Errorf("%s: %v", w.Job.Task, w.Err) }
//		}
//	}
//
// A helper that fails calls tb.Fatalf: the test stops there, with a message
// naming what was expected and what is stored. The helpers expect the
// client not to be running (no Client.Run); they claim and work jobs
// themselves through Client.Claim and Client.Work, so the handlers, work
// middleware, hooks, timeouts and events are the ones Run would use, and
// rate limits and circuit breakers do not apply.
package queuemaxtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/queuemax/queuemax"
)

// workerID is the worker the helpers claim jobs as.
const workerID = "queuemaxtest"

// maxList bounds how many waiting jobs of one task the assertions read.
const maxList = 10000

// NewClient opens a client for a test: cfg as given, except that an empty
// Dir (with no Store) becomes a fresh tb.TempDir() and a nil Logger writes
// warnings and errors to the test's log. The client is closed by
// tb.Cleanup. NewClient fails the test if Open fails.
//
// It does not start Run: enqueue, then assert with RequireEnqueued or work
// the jobs with Drain and WorkOne.
func NewClient(tb testing.TB, cfg queuemax.Config) *queuemax.Client {
	tb.Helper()
	if cfg.Dir == "" && cfg.Store == nil {
		cfg.Dir = tb.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c, err := queuemax.Open(tb.Context(), cfg)
	if err != nil {
		tb.Fatalf("queuemaxtest.NewClient: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, queuemax.ErrClosed) {
			tb.Errorf("queuemaxtest: close client: %v", err)
		}
	})
	return c
}

// RequireOpts narrows the jobs RequireEnqueued and RequireNotEnqueued
// look at. Nil, or the zero value, means every waiting job of the task.
type RequireOpts struct {
	// Task is the task name. Empty means the client's tasks whose payload
	// type is A (see queuemax.TaskNames): every generated task, and every
	// handler built with queuemax.Define. Set it for a task the client has
	// no typed handler for.
	Task string
	// Args, when not nil, must equal the job's decoded arguments: an A,
	// or a *A.
	Args any
	// Priority, when not nil, must equal the job's priority.
	Priority *queuemax.Priority
	// PartitionKey, when not nil, must equal the job's partition key.
	PartitionKey *int64
	// Queue, when not empty, must equal the job's queue ("default" for a
	// job enqueued without one).
	Queue string
	// Tags, when not empty, must all be among the job's tags.
	Tags []string
	// Match, when not nil, must return true for the job (use it for
	// anything else stored with a job: its run-at time, its metadata).
	Match func(*queuemax.Job) bool
}

// Job is a waiting job of task payload type A, with its decoded
// arguments.
type Job[A any] struct {
	*queuemax.Job
	// Args is the job's payload decoded into A.
	Args A
}

// RequireEnqueued requires that exactly one waiting job (pending or
// scheduled) of a task with payload type A matches opts, and returns it
// with its decoded arguments. It fails the test when none matches, when
// more than one does (a job enqueued twice is usually a bug: narrow opts
// to pick one), or when the job's payload does not decode into A.
func RequireEnqueued[A any](tb testing.TB, c *queuemax.Client, opts *RequireOpts) *Job[A] {
	tb.Helper()
	found, all, names := find[A](tb, c, "RequireEnqueued", opts)
	switch len(found) {
	case 1:
		return found[0]
	case 0:
		tb.Fatalf("queuemaxtest.RequireEnqueued[%s]: no waiting job of %s matches%s; waiting jobs of the task:%s",
			typeName[A](), strings.Join(names, ", "), describeOpts(opts), describeJobs(all))
	default:
		tb.Fatalf("queuemaxtest.RequireEnqueued[%s]: %d waiting jobs of %s match%s, want exactly one:%s",
			typeName[A](), len(found), strings.Join(names, ", "), describeOpts(opts), describeJobs(unwrap(found)))
	}
	return nil
}

// RequireNotEnqueued requires that no waiting job (pending or scheduled)
// of a task with payload type A matches opts, and fails the test naming
// the ones that do.
func RequireNotEnqueued[A any](tb testing.TB, c *queuemax.Client, opts *RequireOpts) {
	tb.Helper()
	found, _, names := find[A](tb, c, "RequireNotEnqueued", opts)
	if len(found) > 0 {
		tb.Fatalf("queuemaxtest.RequireNotEnqueued[%s]: %d waiting jobs of %s match%s, want none:%s",
			typeName[A](), len(found), strings.Join(names, ", "), describeOpts(opts), describeJobs(unwrap(found)))
	}
}

// find returns the waiting jobs of A's tasks that match opts, every
// waiting job of those tasks, and the task names.
func find[A any](tb testing.TB, c *queuemax.Client, fn string, opts *RequireOpts) (found []*Job[A], all []*queuemax.Job, names []string) {
	tb.Helper()
	if opts == nil {
		opts = &RequireOpts{}
	}
	want, err := wantArgs[A](opts.Args)
	if err != nil {
		tb.Fatalf("queuemaxtest.%s[%s]: %v", fn, typeName[A](), err)
	}
	names = queuemax.TaskNames[A](c)
	if opts.Task != "" {
		names = []string{opts.Task}
	}
	if len(names) == 0 {
		tb.Fatalf("queuemaxtest.%s[%s]: the client has no task whose payload type is %s (handlers from queuemax.Define or generated code); set RequireOpts.Task",
			fn, typeName[A](), typeName[A]())
	}
	for _, name := range names {
		for _, st := range []queuemax.Status{queuemax.StatusPending, queuemax.StatusScheduled} {
			jobs, err := c.Jobs(tb.Context(), queuemax.ListParams{Task: name, Status: st, Limit: maxList})
			if err != nil {
				tb.Fatalf("queuemaxtest.%s[%s]: list %s jobs of %s: %v", fn, typeName[A](), st, name, err)
			}
			if len(jobs) == maxList {
				tb.Fatalf("queuemaxtest.%s[%s]: %s has %d or more %s jobs; the helpers read at most that many", fn, typeName[A](), name, maxList, st)
			}
			all = append(all, jobs...)
		}
	}
	// Oldest first, as they would run.
	slices.SortStableFunc(all, func(a, b *queuemax.Job) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, j := range all {
		var a A
		if err := queuemax.DecodeArgs(j.Task, j.Payload, &a); err != nil {
			tb.Fatalf("queuemaxtest.%s[%s]: job %d of %s: %v", fn, typeName[A](), j.ID, j.Task, err)
		}
		if (want != nil && !reflect.DeepEqual(*want, a)) ||
			(opts.Priority != nil && j.Priority != *opts.Priority) ||
			(opts.PartitionKey != nil && (j.PartitionKey == nil || *j.PartitionKey != *opts.PartitionKey)) ||
			(opts.Queue != "" && j.Queue != opts.Queue) ||
			slices.ContainsFunc(opts.Tags, func(tag string) bool { return !slices.Contains(j.Tags, tag) }) ||
			(opts.Match != nil && !opts.Match(j)) {
			continue
		}
		found = append(found, &Job[A]{Job: j, Args: a})
	}
	return found, all, names
}

// wantArgs converts RequireOpts.Args to *A, normalised by the same JSON
// round trip a payload makes (so that a nil map equals an empty one when
// the codec makes them so).
func wantArgs[A any](v any) (*A, error) {
	var a A
	switch x := v.(type) {
	case nil:
		return nil, nil
	case A:
		a = x
	case *A:
		if x == nil {
			return nil, nil
		}
		a = *x
	default:
		return nil, fmt.Errorf("RequireOpts.Args is a %T, want a %s or a *%s", v, typeName[A](), typeName[A]())
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("RequireOpts.Args: %w", err)
	}
	var out A
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("RequireOpts.Args: %w", err)
	}
	return &out, nil
}

func typeName[A any]() string { return reflect.TypeFor[A]().String() }

func unwrap[A any](js []*Job[A]) []*queuemax.Job {
	out := make([]*queuemax.Job, len(js))
	for i, j := range js {
		out[i] = j.Job
	}
	return out
}

func describeOpts(o *RequireOpts) string {
	if o == nil {
		return ""
	}
	var parts []string
	if o.Args != nil {
		parts = append(parts, fmt.Sprintf("args %+v", o.Args))
	}
	if o.Priority != nil {
		parts = append(parts, fmt.Sprintf("priority %d", *o.Priority))
	}
	if o.PartitionKey != nil {
		parts = append(parts, fmt.Sprintf("partition key %d", *o.PartitionKey))
	}
	if o.Queue != "" {
		parts = append(parts, fmt.Sprintf("queue %q", o.Queue))
	}
	if len(o.Tags) > 0 {
		parts = append(parts, fmt.Sprintf("tags %q", o.Tags))
	}
	if o.Match != nil {
		parts = append(parts, "Match")
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, ", ")
}

func describeJobs(js []*queuemax.Job) string {
	if len(js) == 0 {
		return " none"
	}
	var sb strings.Builder
	for i, j := range js {
		if i == 10 {
			fmt.Fprintf(&sb, "\n\t... and %d more", len(js)-i)
			break
		}
		fmt.Fprintf(&sb, "\n\tjob %d %s %s priority %d args %s", j.ID, j.Task, j.Status, j.Priority, j.Payload)
	}
	return sb.String()
}
