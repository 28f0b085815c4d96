package queuemax_test

import (
	"errors"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
	"github.com/queuemax/queuemax/testdata/golden/workflow"
)

// TestTypedWorkflowRetry_SQLite: a typed workflow whose first step failed
// (by hand, as a process whose handler failed) is retried; the steps
// after it run with the new result bound to their typed parameters.
func TestTypedWorkflowRetry_SQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testTypedWorkflowRetry(t, func() queuemax.Config { return queuemax.Config{Dir: dir, Shards: 2} })
}

func testTypedWorkflowRetry(t *testing.T, newConfig func() queuemax.Config) {
	producer := queuemaxtest.NewClient(t, newConfig())
	ctx := t.Context()
	h := workflow.New(producer)
	order := workflow.Order{ID: "o-9", Amount: 900}
	wf := queuemax.NewWorkflow("typed-retry")
	charge := h.Charge.Step(wf, "charge", queuemax.Value(order), queuemax.StepOpts(queuemax.Opts{MaxRetries: queuemax.Ptr(0)}))
	ship := h.Ship.Step(wf, "ship", queuemax.Value(order), queuemax.From(charge))
	h.Mail.Step(wf, "mail", queuemax.Value("a@example.com"), queuemax.From(charge), queuemax.From(ship))
	id, err := producer.EnqueueWorkflow(ctx, wf)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := producer.Claim(ctx, "failing-process", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	if _, err := producer.Fail(ctx, jobs[0], errors.New("gateway down")); err != nil {
		t.Fatal(err)
	}
	if info, err := producer.Workflow(ctx, id); err != nil || info.Status != queuemax.WorkflowFailed {
		t.Fatalf("Workflow = %+v, %v; want failed", info, err)
	}
	if n, err := producer.RetryWorkflow(ctx, id); err != nil || n != 3 {
		t.Fatalf("RetryWorkflow = %d, %v; want 3", n, err)
	}
	cfg := newConfig()
	cfg.Handlers = workflow.Handlers()
	cfg.PollInterval = 20 * time.Millisecond
	worker := queuemaxtest.NewClient(t, cfg)
	events, unsubscribe := worker.SubscribeConfig(&queuemax.SubscribeConfig{ChanSize: 16,
		Kinds: []queuemax.EventKind{queuemax.EventWorkflowCompleted, queuemax.EventWorkflowFailed}})
	defer unsubscribe()
	queuemaxtest.Run(t, worker)
	select {
	case e := <-events:
		if e.Kind != queuemax.EventWorkflowCompleted || queuemax.WorkflowID(e.Workflow) != id {
			t.Fatalf("event %+v, want workflow %d completed", e, id)
		}
	case <-time.After(time.Minute):
		t.Fatal("the retried workflow did not end within a minute")
	}
	rc, err := queuemax.WorkflowResult(ctx, producer, id, charge)
	if err != nil || rc.OrderID != "o-9" || rc.Charged != 900 {
		t.Errorf("WorkflowResult(charge) = %+v, %v", rc, err)
	}
	tr, err := queuemax.WorkflowResult(ctx, producer, id, ship)
	if err != nil || tr == nil || tr.Number != "o-9" {
		t.Errorf("WorkflowResult(ship) = %+v, %v; want the tracking number of the receipt bound after the retry", tr, err)
	}
}
