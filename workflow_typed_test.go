package queuemax

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type typedReceipt struct {
	Total int `json:"total"`
}

type typedMailArgs struct {
	To      string       `json:"to"`
	Receipt typedReceipt `json:"receipt"`
}

func TestInput_Into(t *testing.T) {
	var dst typedReceipt
	if o := Value(typedReceipt{Total: 7}).Into(&dst, "receipt"); o != nil || dst.Total != 7 {
		t.Errorf("Value: option %v, dst %+v; want nil and the value", o, dst)
	}
	var zero Input[typedReceipt]
	dst = typedReceipt{Total: 1}
	if o := zero.Into(&dst, "receipt"); o != nil || dst.Total != 0 {
		t.Errorf("zero Input: option %v, dst %+v; want nil and the zero value", o, dst)
	}
	dst = typedReceipt{Total: 1}
	o := From(StepRef[typedReceipt]{name: "charge"}).Into(&dst, "receipt")
	if o == nil || dst.Total != 0 {
		t.Fatalf("From: option %v, dst %+v; want a binding and the zero placeholder", o, dst)
	}
	var s workflowStep
	o.applyStep(&s)
	if want := []StepBinding{{Param: "receipt", From: "charge"}}; !slices.Equal(s.binds, want) {
		t.Errorf("From's option binds %v, want %v", s.binds, want)
	}
}

func TestAddStep(t *testing.T) {
	def := TaskOptions{Priority: PriorityHigh, RetryDelay: 3, Queue: "mail"}
	mail := NewTask[typedMailArgs](nil, "shop.Mail", def).With(Opts{Queue: "fast", MaxRetries: Ptr(2)})
	charge := NewTask[struct{}](nil, "shop.Charge", TaskOptions{})

	wf := NewWorkflow("order")
	ref := AddStep[typedReceipt](wf, charge, "charge", struct{}{})
	if ref.Name() != "charge" {
		t.Fatalf("ref.Name() = %q", ref.Name())
	}
	var args typedMailArgs
	in := From(ref)
	args.To = "x"
	opts := make([]StepOption, 2, 4)
	opts[0] = StepOpts(Opts{Queue: "slow"})
	opts[1] = in.Into(&args.Receipt, "receipt")
	mailRef := AddStep[NoResult](wf, mail, "mail", args, opts...)
	if mailRef.Name() != "mail" {
		t.Fatalf("mailRef.Name() = %q", mailRef.Name())
	}
	if err := wf.Validate(); err != nil {
		t.Fatal(err)
	}
	s := wf.steps[wf.index["mail"]]
	if s.task != "shop.Mail" || !slices.Equal(s.deps(), []string{"charge"}) {
		t.Errorf("mail step: task %q deps %v", s.task, s.deps())
	}
	// The step's StepOpts wins over With, which wins over the defaults.
	e := s.enqueueParams()
	if e.Opts.Queue != "slow" || e.Opts.MaxRetries == nil || *e.Opts.MaxRetries != 2 {
		t.Errorf("opts = %+v, want the step's queue over With's and With's retries", e.Opts)
	}
	if e.defaults == nil || e.defaults.Queue != "mail" || e.defaults.RetryDelay != 3 {
		t.Errorf("defaults = %+v, want the task's", e.defaults)
	}
	raw, _ := json.Marshal(e.Payload)
	if err := e.validate(raw); err != nil {
		t.Errorf("the typed check refuses the placeholder payload %s: %v", raw, err)
	}
	if err := e.validate(json.RawMessage(`{"to":"x"}`)); err == nil {
		t.Errorf("the typed check accepts a payload without receipt")
	}
	// AddStep must not write into the spare capacity of the caller's slice.
	if got := opts[:cap(opts)][2:4]; got[0] != nil || got[1] != nil {
		t.Errorf("AddStep wrote past len(opts): %v", got)
	}
	// An untyped step carries no typed check.
	if e := wf.steps[0].enqueueParams(); e.Task != "shop.Charge" || e.validate == nil {
		t.Errorf("charge step params: %+v", e)
	}
	if diff := cmp.Diff([]string{"charge", "mail"}, wf.Steps()); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestAddStep_Errors(t *testing.T) {
	wf := NewWorkflow("order")
	var unbound Task[struct{}]
	AddStep[NoResult](wf, unbound, "audit", struct{}{})
	err := wf.Validate()
	if !errors.Is(err, ErrInvalidWorkflow) || !errors.Is(err, ErrNotBound) || !strings.Contains(err.Error(), `step "audit"`) {
		t.Errorf("unbound handle: Validate() = %v, want ErrInvalidWorkflow and ErrNotBound naming the step", err)
	}

	wf = NewWorkflow("order")
	task := NewTask[struct{}](nil, "shop.Audit", TaskOptions{})
	AddStep[NoResult](wf, task, "audit", struct{}{})
	AddStep[NoResult](wf, task, "audit", struct{}{})
	if err := wf.Validate(); !errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), `step "audit" is added twice`) {
		t.Errorf("duplicate step: Validate() = %v", err)
	}

	wf = NewWorkflow("order")
	var args typedMailArgs
	AddStep[NoResult](wf, task, "mail", struct{}{}, From(StepRef[typedReceipt]{}).Into(&args.Receipt, "receipt"))
	if err := wf.Validate(); !errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), `step "mail" depends on unknown step ""`) {
		t.Errorf("zero StepRef: Validate() = %v", err)
	}
}
