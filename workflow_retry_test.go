package queuemax

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Workflow retry (RetryWorkflow, a re-queued step's branch) and workflow
// ends announced once across processes. The bodies take an opener of
// clients on one store, so that each runs on SQLite here and on
// PostgreSQL in workflow_retry_pg_test.go.

// wfOpener opens another client on the same store.
type wfOpener func(t *testing.T, cfg Config) *testBundle

func sqliteOpener(t *testing.T) wfOpener {
	dir := t.TempDir()
	return func(t *testing.T, cfg Config) *testBundle {
		cfg.Dir, cfg.Shards = dir, 2
		return setup(t, cfg)
	}
}

// endEvents merges the workflow end events of clients into one channel.
func endEvents(cs ...*Client) <-chan Event {
	out := make(chan Event, 1000)
	for _, c := range cs {
		sub, _ := c.SubscribeConfig(&SubscribeConfig{ChanSize: 1000, Kinds: []EventKind{EventWorkflowCompleted, EventWorkflowFailed}})
		go func() {
			for e := range sub { // ends when c closes
				out <- *e
			}
		}()
	}
	return out
}

// noEndLeft fails unless every workflow end has been claimed: no process
// can announce one again.
func noEndLeft(t *testing.T, c *Client) {
	t.Helper()
	got, err := c.st.ClaimWorkflowEnds(t.Context(), store.ClaimEndsParams{})
	if err != nil || len(got) != 0 {
		t.Fatalf("ends left to claim after the events: %v, %v", got, err)
	}
}

func stepStatuses(t *testing.T, c *Client, id WorkflowID) (WorkflowStatus, []string) {
	t.Helper()
	info, err := c.Workflow(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range info.Steps {
		out = append(out, s.Name+":"+string(s.Status))
	}
	return info.Status, out
}

func TestWorkflowRetry_SQLite(t *testing.T) {
	t.Parallel()
	testWorkflowRetry(t, sqliteOpener(t))
}

func TestWorkflowRetryJob_SQLite(t *testing.T) {
	t.Parallel()
	testWorkflowRetryJob(t, sqliteOpener(t))
}

func TestWorkflowEndsOnce_SQLite(t *testing.T) {
	t.Parallel()
	testWorkflowEndsOnce(t, sqliteOpener(t))
}

// testWorkflowRetry: a workflow whose first step failed is retried: the
// step runs again, the steps it cancelled run after it with its new result
// bound, the AfterSettled step that ran does not run again, the step view
// and status follow, and each run's end is announced once.
func testWorkflowRetry(t *testing.T, open wfOpener) {
	var calls atomic.Int32
	var mu sync.Mutex
	var runs []string
	rec := func(s string) { mu.Lock(); runs = append(runs, s); mu.Unlock() }
	handlers := []Handler{
		DefineResult("wfr.Charge", TaskOptions{MaxRetries: Ptr(0)}, func(ctx context.Context, a wfCharge) (wfReceipt, error) {
			n := calls.Add(1)
			rec(fmt.Sprint("charge", n))
			if n == 1 {
				return wfReceipt{}, errors.New("card declined")
			}
			return wfReceipt{No: a.Amount * int(n)}, nil
		}),
		DefineResult("wfr.Mail", TaskOptions{}, func(ctx context.Context, a wfMail) (string, error) {
			rec(fmt.Sprint("mail:", a.Receipt.No))
			return "sent", nil
		}),
		Define("wfr.Note", TaskOptions{}, func(ctx context.Context, a struct{ N string }) error {
			rec(a.N)
			return nil
		}),
	}
	b := open(t, Config{Handlers: handlers, RecoveryInterval: 100 * time.Millisecond})
	ctx := b.ctx
	evs := endEvents(b.c)
	wf := NewWorkflow("retry-me")
	wf.Add("charge", "wfr.Charge", wfCharge{Amount: 10})
	wf.Add("mail", "wfr.Mail", wfMail{To: "a@b"}, Bind("receipt", "charge"))
	wf.Add("last", "wfr.Note", struct{ N string }{"last"}, After("mail"))
	wf.Add("cleanup", "wfr.Note", struct{ N string }{"cleanup"}, AfterSettled("charge"))
	id, err := b.c.EnqueueWorkflow(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.RetryWorkflow(ctx, id); !errors.Is(err, ErrWorkflowNotRetryable) {
		t.Fatalf("RetryWorkflow(running) = %v, want ErrWorkflowNotRetryable", err)
	}
	if _, err := b.c.RetryWorkflow(ctx, id+1000); !errors.Is(err, ErrWorkflowNotFound) {
		t.Fatalf("RetryWorkflow(unknown) = %v, want ErrWorkflowNotFound", err)
	}
	run(t, b.c)
	if e := waitEvents(t, evs, 1)[0]; e.Kind != EventWorkflowFailed || WorkflowID(e.Workflow) != id {
		t.Fatalf("first end = %+v, want workflow_failed", e)
	}
	st, steps := stepStatuses(t, b.c, id)
	if want := []string{"charge:failed", "mail:cancelled", "last:cancelled", "cleanup:completed"}; st != WorkflowFailed || !slices.Equal(steps, want) {
		t.Fatalf("after the failure: %s %v, want failed %v", st, steps, want)
	}
	n, err := b.c.RetryWorkflow(ctx, id)
	if err != nil || n != 3 {
		t.Fatalf("RetryWorkflow = %d, %v; want 3 steps to run again", n, err)
	}
	if e := waitEvents(t, evs, 1)[0]; e.Kind != EventWorkflowCompleted || WorkflowID(e.Workflow) != id {
		t.Fatalf("second end = %+v, want workflow_completed", e)
	}
	noEndLeft(t, b.c)
	st, steps = stepStatuses(t, b.c, id)
	if want := []string{"charge:completed", "mail:completed", "last:completed", "cleanup:completed"}; st != WorkflowCompleted || !slices.Equal(steps, want) {
		t.Fatalf("after the retry: %s %v, want completed %v", st, steps, want)
	}
	mu.Lock()
	got := slices.Clone(runs)
	mu.Unlock()
	slices.Sort(got)
	if want := []string{"charge1", "charge2", "cleanup", "last", "mail:20"}; !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v (mail with the second charge's result; cleanup once)", got, want)
	}
	if _, err := b.c.RetryWorkflow(ctx, id); !errors.Is(err, ErrWorkflowNotRetryable) {
		t.Fatalf("RetryWorkflow(completed) = %v, want ErrWorkflowNotRetryable", err)
	}
}

// testWorkflowRetryJob: re-queueing the failed step's job (RetryJob) runs
// its branch again and the workflow completes, with one end event per run.
func testWorkflowRetryJob(t *testing.T, open wfOpener) {
	var calls atomic.Int32
	var after atomic.Int32
	handlers := []Handler{
		Define("wfj.Flaky", TaskOptions{MaxRetries: Ptr(0)}, func(ctx context.Context, a struct{}) error {
			if calls.Add(1) == 1 {
				return errors.New("boom")
			}
			return nil
		}),
		Define("wfj.After", TaskOptions{}, func(ctx context.Context, a struct{}) error {
			after.Add(1)
			return nil
		}),
	}
	b := open(t, Config{Handlers: handlers, RecoveryInterval: 100 * time.Millisecond})
	ctx := b.ctx
	evs := endEvents(b.c)
	wf := NewWorkflow("retry-job")
	wf.Add("flaky", "wfj.Flaky", struct{}{})
	wf.Add("b", "wfj.After", struct{}{}, After("flaky"))
	wf.Add("c", "wfj.After", struct{}{}, After("b"))
	id, err := b.c.EnqueueWorkflow(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	run(t, b.c)
	if e := waitEvents(t, evs, 1)[0]; e.Kind != EventWorkflowFailed {
		t.Fatalf("first end = %+v", e)
	}
	info, err := b.c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.c.RetryJob(ctx, info.Steps[0].JobID); err != nil {
		t.Fatalf("RetryJob(flaky): %v", err)
	}
	if e := waitEvents(t, evs, 1)[0]; e.Kind != EventWorkflowCompleted || WorkflowID(e.Workflow) != id {
		t.Fatalf("end after RetryJob = %+v, want workflow_completed", e)
	}
	noEndLeft(t, b.c)
	if st, steps := stepStatuses(t, b.c, id); st != WorkflowCompleted || !slices.Equal(steps, []string{"flaky:completed", "b:completed", "c:completed"}) {
		t.Fatalf("after RetryJob: %s %v", st, steps)
	}
	if after.Load() != 2 {
		t.Fatalf("dependents ran %d times, want 2", after.Load())
	}
}

// testWorkflowEndsOnce: two processes run workflows; every end — by a
// worker, by orphan recovery of a step whose process died, by Cancel
// from a third client — is announced exactly once over both.
func testWorkflowEndsOnce(t *testing.T, open wfOpener) {
	h := []Handler{Define("wfe.Ok", TaskOptions{}, func(ctx context.Context, a struct{}) error { return nil })}
	cfg := Config{Handlers: h, RecoveryInterval: 50 * time.Millisecond, StuckTimeout: 500 * time.Millisecond,
		HeartbeatInterval: 50 * time.Millisecond}
	p1, p2 := open(t, cfg), open(t, cfg)
	other := open(t, Config{}) // enqueues, claims as a process that dies, cancels
	ctx := p1.ctx
	evs := endEvents(p1.c, p2.c, other.c)

	// Orphan recovery: a step claimed by a process that never finishes
	// it, with no retries left, is dead-lettered by a rescuer.
	owf := NewWorkflow("orphan")
	owf.Add("a", "wfe.Dies", struct{}{}, StepOpts(Opts{MaxRetries: Ptr(0)}))
	orphan, err := other.c.EnqueueWorkflow(ctx, owf)
	if err != nil {
		t.Fatal(err)
	}
	if js, err := other.c.Claim(ctx, "dead-process", 1); err != nil || len(js) != 1 {
		t.Fatalf("Claim = %v, %v", js, err)
	}
	// Cancel: the only step of a workflow nobody handles, cancelled by a
	// client that is not running.
	cwf := NewWorkflow("cancelled")
	cwf.Add("a", "wfe.Nobody", struct{}{})
	cancelled, err := other.c.EnqueueWorkflow(ctx, cwf)
	if err != nil {
		t.Fatal(err)
	}
	want := map[WorkflowID]EventKind{orphan: EventWorkflowFailed, cancelled: EventWorkflowFailed}
	// Workers: many two-step workflows over both processes.
	for i := range 20 {
		wf := NewWorkflow(fmt.Sprint("w", i))
		wf.Add("a", "wfe.Ok", struct{}{})
		wf.Add("b", "wfe.Ok", struct{}{}, After("a"))
		id, err := other.c.EnqueueWorkflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = EventWorkflowCompleted
	}
	run(t, p1.c)
	run(t, p2.c)
	info, err := other.c.Workflow(ctx, cancelled)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.c.Cancel(ctx, info.Steps[0].JobID); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	got := map[WorkflowID]EventKind{}
	for _, e := range waitEvents(t, evs, len(want)) {
		id := WorkflowID(e.Workflow)
		if _, dup := got[id]; dup {
			t.Fatalf("workflow %d announced twice (%s)", id, e.Kind)
		}
		got[id] = e.Kind
	}
	noEndLeft(t, p1.c)
	for id, k := range want {
		if got[id] != k {
			t.Errorf("workflow %d: event %q, want %q", id, got[id], k)
		}
	}
	select {
	case e := <-evs:
		t.Fatalf("extra end event %+v", e)
	default:
	}
	if st, _ := stepStatuses(t, p1.c, orphan); st != WorkflowFailed {
		t.Fatalf("orphaned workflow %s, want failed", st)
	}
}

// TestWorkflowEndsOnce_QueueMax: queue-max 0.2.0, writing the same SQLite
// files, pops and completes a workflow's steps (deleting their rows, as
// its complete_job does); the end it recorded is announced once by one of
// two running processes.
func TestWorkflowEndsOnce_QueueMax(t *testing.T) {
	t.Parallel()
	open := sqliteOpener(t)
	h := []Handler{Define("qmw.Ours", TaskOptions{}, func(ctx context.Context, a struct{}) error { return nil })}
	cfg := Config{Handlers: h, RecoveryInterval: 50 * time.Millisecond}
	p1, p2 := open(t, cfg), open(t, cfg)
	ctx := p1.ctx
	evs := endEvents(p1.c, p2.c)
	wf := NewWorkflow("by-queue-max")
	wf.Add("a", "qmw.Theirs", struct{}{})
	wf.Add("b", "qmw.Theirs", struct{}{}, After("a"))
	id, err := open(t, Config{}).c.EnqueueWorkflow(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	run(t, p1.c)
	run(t, p2.c)
	info, err := p1.c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.Steps {
		j, err := p1.c.Job(ctx, s.JobID)
		if err != nil || j.Status != StatusPending {
			t.Fatalf("step %s before queue-max pops it: %+v, %v", s.Name, j, err)
		}
		queueMaxWrite(t, p1.dir, id.Shard(),
			// A fresh heartbeat, so that orphan recovery leaves the popped
			// row alone until queue-max completes it.
			fmt.Sprintf(`UPDATE fila SET status = 'processing', worker_id = 'qm', tentativas = tentativas + 1,
				heartbeat = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', 'now') WHERE id = %d`, s.JobID.Seq()),
			fmt.Sprintf(`DELETE FROM fila WHERE id = %d`, s.JobID.Seq()))
	}
	if e := waitEvents(t, evs, 1)[0]; e.Kind != EventWorkflowCompleted || WorkflowID(e.Workflow) != id {
		t.Fatalf("end = %+v, want workflow_completed of %d", e, id)
	}
	noEndLeft(t, p1.c)
	select {
	case e := <-evs:
		t.Fatalf("announced twice: %+v", e)
	default:
	}
}
