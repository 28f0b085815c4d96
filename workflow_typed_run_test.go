package queuemax_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
	"github.com/queuemax/queuemax/testdata/golden/workflow"
)

// TestTypedWorkflow runs a workflow built from generated handles
// (testdata/golden/workflow) on both stores. The producer has no
// handlers, so the steps' defaults (priority, retries, queue) can only
// come from the handles; ship's parameter receipt is bound to charge's
// result, which ship returns in its tracking number.
func TestTypedWorkflow(t *testing.T) {
	t.Parallel()
	stores := []struct {
		name string
		cfgs func(t *testing.T) func() queuemax.Config // one Config a client, on one queue
	}{
		{"SQLite", func(t *testing.T) func() queuemax.Config {
			dir := t.TempDir()
			return func() queuemax.Config { return queuemax.Config{Dir: dir, Shards: 2} }
		}},
		{"PostgreSQL", queuemax.PGTestConfigs},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			cfgs := st.cfgs(t)
			cfg := cfgs()
			cfg.MaxRetries = queuemax.Ptr(7)
			producer := queuemaxtest.NewClient(t, cfg)
			cfg.Store = cfgs().Store
			cfg.Handlers = workflow.Handlers()
			cfg.PollInterval = 20 * time.Millisecond
			worker := queuemaxtest.NewClient(t, cfg)
			ctx := t.Context()

			h := workflow.New(producer)
			order := workflow.Order{ID: "o-1", Amount: 4200}
			wf := queuemax.NewWorkflow("typed")
			charge := h.Charge.Step(wf, "charge", queuemax.Value(order))
			ship := h.Ship.With(queuemax.Opts{Priority: queuemax.Ptr(queuemax.PriorityMedium)}).
				Step(wf, "ship", queuemax.Value(order), queuemax.From(charge))
			h.Mail.Step(wf, "mail", queuemax.Value("a@example.com"), queuemax.From(charge), queuemax.From(ship),
				queuemax.StepOpts(queuemax.Opts{MaxRetries: queuemax.Ptr(0)}))
			h.Audit.Step(wf, "audit", queuemax.AfterSettled("mail"))
			id, err := producer.EnqueueWorkflow(ctx, wf)
			if err != nil {
				t.Fatalf("EnqueueWorkflow: %v", err)
			}
			info, err := producer.Workflow(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			steps := map[string]queuemax.WorkflowStep{}
			for _, s := range info.Steps {
				steps[s.Name] = s
			}
			if s := steps["ship"]; len(s.Binds) != 1 || s.Binds[0] != (queuemax.StepBinding{Param: "receipt", From: "charge"}) {
				t.Errorf("ship binds %+v, want receipt from charge", s.Binds)
			}
			if s := steps["mail"]; len(s.Binds) != 2 || s.Binds[1] != (queuemax.StepBinding{Param: "tracking", From: "ship"}) {
				t.Errorf("mail binds %+v, want receipt from charge and tracking from ship", s.Binds)
			}
			// The jobs' options: the annotation's defaults, With, StepOpts.
			for _, tc := range []struct {
				step        string
				prio        queuemax.Priority
				maxAttempts int
				queue       string
			}{
				{"charge", queuemax.PriorityHigh, 4, "default"}, // priority=2 retries=3
				{"ship", queuemax.PriorityMedium, 8, "default"}, // With; Config.MaxRetries
				{"mail", queuemax.PriorityLow, 1, "mail"},       // queue=mail; StepOpts
			} {
				j, err := producer.Job(ctx, steps[tc.step].JobID)
				if err != nil {
					t.Fatalf("Job of step %s: %v", tc.step, err)
				}
				if j.Priority != tc.prio || j.MaxAttempts != tc.maxAttempts || j.Queue != tc.queue {
					t.Errorf("step %s: priority %d, max attempts %d, queue %q; want %d, %d, %q",
						tc.step, j.Priority, j.MaxAttempts, j.Queue, tc.prio, tc.maxAttempts, tc.queue)
				}
			}

			if _, err := queuemax.WorkflowResult(ctx, producer, id, ship); !errors.Is(err, queuemax.ErrNoResult) {
				t.Errorf("WorkflowResult of a waiting step: %v, want ErrNoResult", err)
			}
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
				t.Fatal("the workflow did not end within a minute")
			}
			// The typed read of a step's result, and its errors.
			rc, err := queuemax.WorkflowResult(ctx, producer, id, charge)
			if err != nil || rc.OrderID != "o-1" || rc.Charged != 4200 {
				t.Errorf("WorkflowResult(charge) = %+v, %v; want the receipt of o-1", rc, err)
			}
			if _, err := queuemax.WorkflowResult(ctx, producer, id, queuemax.StepRef[workflow.Receipt]{}); !errors.Is(err, queuemax.ErrInvalidWorkflow) {
				t.Errorf("WorkflowResult of a step not in the workflow: %v, want ErrInvalidWorkflow", err)
			}
			if _, err := queuemax.WorkflowResult(ctx, producer, queuemax.NewWorkflowID(0, 1<<40), charge); !errors.Is(err, queuemax.ErrWorkflowNotFound) {
				t.Errorf("WorkflowResult of an unknown workflow: %v, want ErrWorkflowNotFound", err)
			}
			raw, err := producer.Result(ctx, steps["ship"].JobID)
			if err != nil {
				t.Fatal(err)
			}
			var tr workflow.Tracking
			if err := json.Unmarshal(raw, &tr); err != nil || tr.Number != "o-1" {
				t.Errorf("ship's result %s (%v): want the tracking number of the bound receipt, o-1", raw, err)
			}
			typed, err := h.Ship.Result(context.WithoutCancel(ctx), steps["ship"].JobID)
			if err != nil || typed == nil || *typed != tr {
				t.Errorf("Ship.Result = %+v, %v; want %+v", typed, err, tr)
			}
		})
	}
}
