package queuemax

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// workflowBackends runs fn on SQLite and, when it is reachable, on
// PostgreSQL, with a worker client running handlers.
// Each backend gets its own handlers (mk), recording to its own rec.
func workflowBackends(t *testing.T, mk func(rec *wfRecorder) []Handler, fn func(t *testing.T, b *testBundle, rec *wfRecorder)) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		rec := &wfRecorder{}
		fn(t, setup(t, Config{Shards: 3, Handlers: mk(rec), HeartbeatInterval: 50 * time.Millisecond}), rec)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		dsn := pgTestDSN(t)
		rec := &wfRecorder{}
		fn(t, setup(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}, Handlers: mk(rec), HeartbeatInterval: 50 * time.Millisecond}), rec)
	})
}

type wfCharge struct {
	Amount int `json:"amount"`
}

type wfReceipt struct {
	No int `json:"no"`
}

type wfMail struct {
	To      string    `json:"to"`
	Receipt wfReceipt `json:"receipt"`
}

// wfRecorder records the order steps ran in.
type wfRecorder struct {
	mu   sync.Mutex
	runs []string
}

func (r *wfRecorder) add(s string) {
	r.mu.Lock()
	r.runs = append(r.runs, s)
	r.mu.Unlock()
}

func (r *wfRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

func TestWorkflow_RunsInOrderAndPassesResults(t *testing.T) {
	t.Parallel()
	handlers := func(rec *wfRecorder) []Handler {
		return []Handler{
			DefineResult("wf.Charge", TaskOptions{}, func(ctx context.Context, a wfCharge) (wfReceipt, error) {
				rec.add("charge")
				return wfReceipt{No: a.Amount * 2}, nil
			}),
			Define("wf.Ship", TaskOptions{}, func(ctx context.Context, a struct{}) error {
				var r wfReceipt
				if err := StepResult(ctx, "charge", &r); err != nil {
					return Permanent(err)
				}
				rec.add("ship:" + itoa(r.No))
				return nil
			}),
			DefineResult("wf.Mail", TaskOptions{}, func(ctx context.Context, a wfMail) (string, error) {
				var s struct{}
				if err := StepResult(ctx, "ship", &s); !errors.Is(err, ErrNoStepResult) {
					return "", Permanent(errors.New("StepResult of a step without result: " + errString(err)))
				}
				if err := StepResult(ctx, "nope", &s); !errors.Is(err, ErrInvalidWorkflow) {
					return "", Permanent(errors.New("StepResult of an unknown step: " + errString(err)))
				}
				rec.add("mail:" + a.To + ":" + itoa(a.Receipt.No))
				return "sent", nil
			}),
		}
	}
	workflowBackends(t, handlers, func(t *testing.T, b *testBundle, rec *wfRecorder) {
		ctx := b.ctx
		evs := collect(b.c, EventWorkflowCompleted, EventWorkflowFailed)
		wf := NewWorkflow("order-42")
		wf.Add("charge", "wf.Charge", wfCharge{Amount: 21})
		wf.Add("ship", "wf.Ship", struct{}{}, After("charge"))
		wf.Add("mail", "wf.Mail", wfMail{To: "a@b"}, After("charge", "ship"), Bind("receipt", "charge"))
		id, err := b.c.EnqueueWorkflow(ctx, wf)
		if err != nil {
			t.Fatalf("EnqueueWorkflow: %v", err)
		}
		info, err := b.c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Name != "order-42" || info.Status != WorkflowRunning || len(info.Steps) != 3 ||
			info.Steps[1].Status != StepWaiting || info.Steps[0].Status != StatusPending {
			t.Fatalf("Workflow before Run = %+v", info)
		}
		for _, s := range info.Steps {
			if s.JobID.Shard() != id.Shard() {
				t.Errorf("step %s on shard %d, workflow on %d", s.Name, s.JobID.Shard(), id.Shard())
			}
		}
		run(t, b.c)
		e := waitEvents(t, evs, 1)[0]
		if e.Kind != EventWorkflowCompleted || WorkflowID(e.Workflow) != id || e.WorkflowName != "order-42" {
			t.Fatalf("event = %+v", e)
		}
		if got, want := rec.list(), []string{"charge", "ship:42", "mail:a@b:42"}; !slices.Equal(got, want) {
			t.Fatalf("runs = %v, want %v", got, want)
		}
		info, err = b.c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != WorkflowCompleted || info.FinishedAt.IsZero() {
			t.Fatalf("Workflow after Run = %+v", info)
		}
		for _, s := range info.Steps {
			if s.Status != StatusCompleted {
				t.Errorf("step %s = %s, want completed", s.Name, s.Status)
			}
		}
		if r, err := b.c.Result(ctx, info.Steps[2].JobID); err != nil || string(r) != `"sent"` {
			t.Errorf("mail's result = %s, %v", r, err)
		}
		st, err := b.c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Workflows.Completed != 1 || st.Workflows.Running != 0 {
			t.Errorf("Stats.Workflows = %+v", st.Workflows)
		}
		ls, err := b.c.Workflows(ctx, WorkflowListParams{Status: WorkflowCompleted})
		if err != nil || len(ls) != 1 || ls[0].ID != id {
			t.Fatalf("Workflows(completed) = %v, %v", ls, err)
		}
		if ls, err := b.c.Workflows(ctx, WorkflowListParams{Status: WorkflowRunning}); err != nil || len(ls) != 0 {
			t.Fatalf("Workflows(running) = %v, %v", ls, err)
		}
		select {
		case e := <-evs:
			t.Fatalf("second workflow event %+v", e)
		default:
		}
	})
}

func TestWorkflow_FailureCancelsDependents(t *testing.T) {
	t.Parallel()
	handlers := func(rec *wfRecorder) []Handler {
		return []Handler{
			Define("wf.Boom", TaskOptions{MaxRetries: Ptr(0)}, func(ctx context.Context, a struct{}) error {
				rec.add("boom")
				return errors.New("card declined")
			}),
			Define("wf.Never", TaskOptions{}, func(ctx context.Context, a struct{}) error {
				rec.add("never")
				return nil
			}),
			Define("wf.Cleanup", TaskOptions{}, func(ctx context.Context, a struct{}) error {
				rec.add("cleanup")
				return nil
			}),
		}
	}
	workflowBackends(t, handlers, func(t *testing.T, b *testBundle, rec *wfRecorder) {
		ctx := b.ctx
		evs := collect(b.c, EventWorkflowCompleted, EventWorkflowFailed)
		wf := NewWorkflow("fail")
		wf.Add("charge", "wf.Boom", struct{}{})
		wf.Add("ship", "wf.Never", struct{}{}, After("charge"))
		wf.Add("mail", "wf.Never", struct{}{}, After("ship"))
		wf.Add("cleanup", "wf.Cleanup", struct{}{}, AfterSettled("charge"))
		id, err := b.c.EnqueueWorkflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		run(t, b.c)
		e := waitEvents(t, evs, 1)[0]
		if e.Kind != EventWorkflowFailed || WorkflowID(e.Workflow) != id || e.Error != "failed" {
			t.Fatalf("event = %+v", e)
		}
		got := rec.list()
		slices.Sort(got)
		if !slices.Equal(got, []string{"boom", "cleanup"}) {
			t.Fatalf("runs = %v", got)
		}
		info, err := b.c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Status{"charge": StatusFailed, "ship": StatusCancelled, "mail": StatusCancelled, "cleanup": StatusCompleted}
		for _, s := range info.Steps {
			if s.Status != want[s.Name] {
				t.Errorf("step %s = %s, want %s", s.Name, s.Status, want[s.Name])
			}
		}
		if r := info.Steps[1].Reason; !strings.Contains(r, `step "charge" failed`) || !strings.Contains(r, "card declined") {
			t.Errorf("ship's reason = %q", r)
		}
		if info.Status != WorkflowFailed {
			t.Errorf("status %s", info.Status)
		}
	})
}

func TestWorkflow_Cancel(t *testing.T) {
	t.Parallel()
	type chans struct {
		started chan struct{}
		causes  chan error
	}
	var mu sync.Mutex
	byRec := map[*wfRecorder]chans{}
	handlers := func(rec *wfRecorder) []Handler {
		started, causes := make(chan struct{}, 4), make(chan error, 4)
		mu.Lock()
		byRec[rec] = chans{started, causes}
		mu.Unlock()
		return []Handler{
			Define("wf.Block", TaskOptions{}, func(ctx context.Context, a struct{}) error {
				started <- struct{}{}
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			}),
			Define("wf.Never2", TaskOptions{}, func(ctx context.Context, a struct{}) error {
				return errors.New("must not run")
			}),
		}
	}
	workflowBackends(t, handlers, func(t *testing.T, b *testBundle, rec *wfRecorder) {
		mu.Lock()
		started, causes := byRec[rec].started, byRec[rec].causes
		mu.Unlock()
		ctx := b.ctx
		evs := collect(b.c, EventWorkflowCompleted, EventWorkflowFailed)
		wf := NewWorkflow("cancel-me")
		wf.Add("block", "wf.Block", struct{}{})
		wf.Add("next", "wf.Never2", struct{}{}, After("block"))
		wf.Add("always", "wf.Never2", struct{}{}, AfterSettled("block"))
		id, err := b.c.EnqueueWorkflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		run(t, b.c)
		<-started
		if err := b.c.CancelWorkflow(ctx, id); err != nil {
			t.Fatalf("CancelWorkflow: %v", err)
		}
		if c := <-causes; !errors.Is(c, ErrJobCancelled) {
			t.Errorf("running step's cause = %v, want ErrJobCancelled", c)
		}
		e := waitEvents(t, evs, 1)[0]
		if e.Kind != EventWorkflowFailed || e.Error != "cancelled" {
			t.Fatalf("event = %+v", e)
		}
		info, err := b.c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != WorkflowCancelled {
			t.Fatalf("status %s", info.Status)
		}
		for _, s := range info.Steps {
			if s.Status != StatusCancelled {
				t.Errorf("step %s = %s, want cancelled", s.Name, s.Status)
			}
		}
		if err := b.c.CancelWorkflow(ctx, id+1000); !errors.Is(err, ErrWorkflowNotFound) {
			t.Errorf("CancelWorkflow(unknown) = %v", err)
		}
		if _, err := b.c.Workflow(ctx, id+1000); !errors.Is(err, ErrWorkflowNotFound) {
			t.Errorf("Workflow(unknown) = %v", err)
		}
	})
}

func TestWorkflow_EnqueueErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Handlers: []Handler{
		Define("wf.U", TaskOptions{Unique: UniqueOpts{ByArgs: true}}, func(context.Context, struct{}) error { return nil }),
		Define("wf.A", TaskOptions{}, func(context.Context, struct{ N int }) error { return nil }),
	}})
	ctx := b.ctx
	cyc := NewWorkflow("cyc")
	cyc.Add("a", "wf.A", struct{ N int }{}, After("b"))
	cyc.Add("b", "wf.A", struct{ N int }{}, After("a"))
	if _, err := b.c.EnqueueWorkflow(ctx, cyc); !errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), "a -> b -> a") {
		t.Errorf("cycle: %v", err)
	}
	u := NewWorkflow("u")
	u.Add("a", "wf.U", struct{}{})
	if _, err := b.c.EnqueueWorkflow(ctx, u); !errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), "unique") {
		t.Errorf("unique step: %v", err)
	}
	bad := NewWorkflow("bad")
	bad.Add("a", "wf.A", map[string]any{"N": "x"})
	if _, err := b.c.EnqueueWorkflow(ctx, bad); err == nil || !strings.Contains(err.Error(), `step "a"`) {
		t.Errorf("bad payload: %v", err)
	}
	q := NewWorkflow("q")
	q.Add("a", "wf.A", struct{ N int }{})
	q.Add("b", "wf.A", struct{ N int }{}, Bind(`x"y`, "a"))
	if _, err := b.c.EnqueueWorkflow(ctx, q); !errors.Is(err, ErrInvalidWorkflow) {
		t.Errorf("quote in a bound parameter: %v", err)
	}
	if err := StepResult(ctx, "a", new(int)); !errors.Is(err, ErrNotWorkflowStep) {
		t.Errorf("StepResult outside a step: %v", err)
	}
	if _, err := b.c.Workflows(ctx, WorkflowListParams{Status: "done"}); err == nil {
		t.Error("Workflows with an invalid status: no error")
	}
	// Nothing was stored by the refused workflows.
	if st, err := b.c.Stats(ctx); err != nil || st.Pending+st.Scheduled != 0 {
		t.Errorf("after refused workflows: %+v, %v", st, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
