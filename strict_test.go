package queuemax_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/testdata/golden/struct_params"
)

// issuePayload is the struct of issue 20: a field encoding/json omits when
// it is zero.
type issuePayload struct {
	Seq  int    `json:"seq"`
	Note string `json:"note,omitempty"`
}

// TestDecodeArgs_OwnEncodingRoundTrips is the codec's one rule: whatever
// encoding/json writes for a payload type decodes, with the check
// enqueues run, into the same value.
func TestDecodeArgs_OwnEncodingRoundTrips(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(20, 1))
	types := []reflect.Type{
		reflect.TypeFor[issuePayload](),
		reflect.TypeFor[struct_params.BillArgs](),
		reflect.TypeFor[struct_params.ProcessArgs](),
		reflect.TypeFor[struct_params.Invoice](),
		reflect.TypeFor[optionalKinds](),
		reflect.TypeFor[map[string][]struct_params.Line](),
	}
	schemas := map[reflect.Type]json.RawMessage{}
	for _, typ := range types {
		schemas[typ] = queuemax.PayloadSchema(typ)
	}
	for _, typ := range types {
		for i := range 300 {
			want := randValue(r, typ, false, 0)
			raw, err := json.Marshal(want.Interface())
			if err != nil {
				t.Fatalf("%s: Marshal(%#v): %v", typ, want, err)
			}
			got := reflect.New(typ)
			if err := queuemax.DecodePayload("t", raw, got.Interface()); err != nil {
				t.Fatalf("%s #%d: DecodePayload(%s): %v", typ, i, raw, err)
			}
			if d := cmp.Diff(want.Interface(), got.Elem().Interface(), sameValue); d != "" {
				t.Fatalf("%s #%d: %s decoded to another value (-want +got):\n%s", typ, i, raw, d)
			}
			if err := queuemax.CheckSchema("t", raw, schemas[typ]); err != nil {
				t.Fatalf("%s #%d: %s does not fit the published schema %s: %v", typ, i, raw, schemas[typ], err)
			}
		}
	}
}

// optionalKinds has every way a key may be left out.
type optionalKinds struct {
	Gone   string            `json:"-"`
	Dash   string            `json:"-,"`
	Empty  []int             `json:"empty,omitempty"`
	Zero   time.Time         `json:"zero,omitzero"`
	Quoted int64             `json:"quoted,string"`
	QPtr   *bool             `json:"qptr,string,omitempty"`
	Map    map[int]string    `json:"map"`
	Nested []issuePayload    `json:"nested"`
	Deep   map[string]*Inner `json:"deep,omitempty"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	Bytes  []byte            `json:"bytes"`
	Inner
}

// Inner is embedded in optionalKinds.
type Inner struct {
	Name string `json:"name"`
	Opt  *int   `json:"opt"`
}

// TestDecodeArgs_RefusedAtEveryDepth: unknown keys, keys in another case,
// wrong JSON types and missing required keys are refused the same way at
// the top level and inside a generated stub's struct parameter.
func TestDecodeArgs_RefusedAtEveryDepth(t *testing.T) {
	t.Parallel()
	good := map[string]any{
		"inv": map[string]any{
			"id": "i1", "amount_cents": 1250, "count": "3", "ref": strings.Repeat("ab", 16), "price": "12.50",
			"lines": []any{map[string]any{"sku": "s", "qty": 1}}, "flags": []bool{true, false, true},
		},
		"tally": map[string]any{"key": "k"},
		"at":    "2026-01-02T03:04:05Z",
		"addr":  "10.0.0.1",
	}
	ok, _ := json.Marshal(good)
	var a struct_params.BillArgs
	if err := queuemax.DecodeArgs("t.Bill", ok, &a); err != nil {
		t.Fatalf("DecodeArgs(%s): %v", ok, err)
	}
	if a.Inv.AmountCents != 1250 || a.Inv.Count != 3 || a.Inv.Price != 1250 || a.Inv.Audit != nil || a.Tally.Val != 0 {
		t.Errorf("decoded %+v", a)
	}
	schema := queuemax.PayloadSchema(reflect.TypeFor[struct_params.BillArgs]())
	if err := queuemax.CheckSchema("t.Bill", ok, schema); err != nil {
		t.Errorf("CheckSchema(%s): %v", ok, err)
	}
	// ownCodec marks the cases a schema cannot see: a type's own
	// UnmarshalText or UnmarshalJSON refuses them.
	tests := []struct {
		name     string
		edit     func(m map[string]any)
		field    string
		ownCodec bool
	}{
		{"TopUnknown", func(m map[string]any) { m["extra"] = 1 }, "extra", false},
		{"TopCase", func(m map[string]any) { m["Inv"] = m["inv"]; delete(m, "inv") }, "Inv", false},
		{"TopMissing", func(m map[string]any) { delete(m, "tally") }, "tally", false},
		{"TopWrongType", func(m map[string]any) { m["at"] = 5 }, "at", false},
		{"NestedMissing", func(m map[string]any) { delete(inv(m), "amount_cents") }, "inv.amount_cents", false},
		{"NestedWrongType", func(m map[string]any) { inv(m)["amount_cents"] = "oops" }, "inv.amount_cents", false},
		{"NestedCase", func(m map[string]any) { inv(m)["Amount_cents"] = 1 }, "inv.Amount_cents", false},
		{"NestedUnknown", func(m map[string]any) { inv(m)["secret"] = "x" }, "inv.secret", false},
		{"NestedNull", func(m map[string]any) { inv(m)["amount_cents"] = nil }, "inv.amount_cents", false},
		{"PromotedMissing", func(m map[string]any) { delete(inv(m), "id") }, "inv.id", false},
		{"QuotedNotString", func(m map[string]any) { inv(m)["count"] = 3 }, "inv.count", false},
		{"QuotedNotNumber", func(m map[string]any) { inv(m)["count"] = "three" }, "inv.count", true},
		{"TextBad", func(m map[string]any) { inv(m)["ref"] = "short" }, "inv.ref", true},
		{"OwnJSONBad", func(m map[string]any) { inv(m)["price"] = 12 }, "inv.price", true},
		{"InSlice", func(m map[string]any) { inv(m)["lines"] = []any{map[string]any{"sku": "s"}} }, "inv.lines[0].qty", false},
		{"InSliceUnknown", func(m map[string]any) { inv(m)["lines"] = []any{map[string]any{"sku": "s", "qty": 1, "SKU": "t"}} }, "inv.lines[0].SKU", false},
		{"InMap", func(m map[string]any) { inv(m)["labels"] = map[string]any{"a": map[string]any{"qty": 1}} }, "inv.labels.a.sku", false},
		{"ArrayLength", func(m map[string]any) { inv(m)["flags"] = []bool{true} }, "inv.flags", false},
		{"GenericWrongType", func(m map[string]any) { m["tally"] = map[string]any{"key": 1} }, "tally.key", false},
	}
	for _, tt := range tests {
		m := map[string]any{}
		json.Unmarshal(ok, &m)
		tt.edit(m)
		raw, _ := json.Marshal(m)
		var a struct_params.BillArgs
		err := queuemax.DecodeArgs("t.Bill", raw, &a)
		var pe *queuemax.PayloadShapeError
		if !errors.As(err, &pe) || pe.Field != tt.field || !errors.Is(err, queuemax.ErrPayloadShape) {
			t.Errorf("%s: DecodeArgs(%s) = %v, want a *PayloadShapeError for %q", tt.name, raw, err, tt.field)
		}
		if tt.ownCodec {
			continue
		}
		err = queuemax.CheckSchema("t.Bill", raw, schema)
		if !errors.As(err, &pe) || pe.Field != tt.field {
			t.Errorf("%s: CheckSchema(%s) = %v, want a *PayloadShapeError for %q", tt.name, raw, err, tt.field)
		}
	}
}

func inv(m map[string]any) map[string]any { return m["inv"].(map[string]any) }

// TestIssuePayload_EveryEnqueuePathRuns: the struct of issue 20, its
// optional field zero, enqueued through every Go path, runs once with its
// value intact: generated stubs, Task.Enqueue, Client.Enqueue, EnqueueMany
// and Call (the CLI path is TestIssuePayload_CLIAndDLQRequeue in package
// cli).
func TestIssuePayload_EveryEnqueuePathRuns(t *testing.T) {
	t.Parallel()
	const task = "t.P"
	got := make(chan issuePayload, 16)
	h := queuemax.Define(task, queuemax.TaskOptions{}, func(_ context.Context, p issuePayload) error {
		got <- p
		return nil
	})
	// The generated stub of a task taking the same struct
	// (testdata/golden/struct_params), its handler reporting what it got.
	stubTask := struct_params.New(nil).Process.Name()
	hs := queuemax.Define(stubTask, queuemax.TaskOptions{}, func(_ context.Context, a struct_params.ProcessArgs) error {
		got <- issuePayload{Seq: a.P.Seq, Note: a.P.Note}
		return nil
	})
	ctx := t.Context()
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: t.TempDir(), Shards: 2, Handlers: []queuemax.Handler{h, hs}, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A producer without handlers: the typed handle checks with the same
	// decode.
	prod, err := queuemax.Open(ctx, queuemax.Config{Dir: c.Dir(), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	want := map[int]issuePayload{}
	add := func(how string, seq int, enqueue func(p issuePayload) error) {
		p := issuePayload{Seq: seq}
		if seq%2 == 0 {
			p.Note = "n" + how
		}
		if err := enqueue(p); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		want[seq] = p
	}
	add("Task.Enqueue", 1, func(p issuePayload) error {
		_, err := queuemax.NewTask[issuePayload](c, task, queuemax.TaskOptions{}).Enqueue(ctx, p)
		return err
	})
	add("Task.Enqueue producer", 2, func(p issuePayload) error {
		_, err := queuemax.NewTask[issuePayload](prod, task, queuemax.TaskOptions{}).Enqueue(ctx, p)
		return err
	})
	add("Client.Enqueue", 3, func(p issuePayload) error { _, err := c.Enqueue(ctx, task, p, queuemax.Opts{}); return err })
	add("Client.Enqueue raw", 5, func(p issuePayload) error {
		_, err := c.Enqueue(ctx, task, json.RawMessage(`{"seq":5}`), queuemax.Opts{})
		return err
	})
	add("EnqueueMany", 7, func(p issuePayload) error {
		_, err := c.EnqueueMany(ctx, []queuemax.EnqueueParams{{Task: task, Payload: p}, {Task: task, Payload: issuePayload{Seq: 8, Note: "nEnqueueMany"}}})
		return err
	})
	want[8] = issuePayload{Seq: 8, Note: "nEnqueueMany"}
	add("Task.EnqueueMany", 9, func(p issuePayload) error {
		_, err := queuemax.NewTask[issuePayload](c, task, queuemax.TaskOptions{}).EnqueueMany(ctx, []issuePayload{p})
		return err
	})
	add("generated stub", 13, func(p issuePayload) error {
		_, err := struct_params.New(c).Process.Delay(ctx, struct_params.Payload{Seq: p.Seq, Note: p.Note})
		return err
	})
	add("generated stub Map", 15, func(p issuePayload) error {
		_, err := struct_params.New(prod).Process.Map(ctx, []struct_params.Payload{{Seq: p.Seq, Note: p.Note}})
		return err
	})
	// A foreign producer's payload without the required key is refused.
	if _, err := c.Enqueue(ctx, task, json.RawMessage(`{"note":"x"}`), queuemax.Opts{}); !errors.Is(err, queuemax.ErrPayloadShape) {
		t.Errorf("payload without seq: err = %v, want ErrPayloadShape", err)
	}
	if err := queuemax.Call(ctx, queuemax.TaskOptions{}, func(_ context.Context, p issuePayload) error {
		if p != (issuePayload{Seq: 11}) {
			t.Errorf("Call got %+v", p)
		}
		return nil
	}, issuePayload{Seq: 11}); err != nil {
		t.Errorf("Call: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	for range want {
		select {
		case p := <-got:
			if w, ok := want[p.Seq]; !ok || w != p {
				t.Errorf("handler got %+v, want %+v", p, w)
			}
			delete(want, p.Seq)
		case <-time.After(30 * time.Second):
			t.Fatalf("jobs not run: %+v", want)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Failed != 0 || st.DeadLetters != 0 {
		t.Errorf("stats: %d failed, %d dead letters; want none", st.Failed, st.DeadLetters)
	}
}

// TestPublishedSchema_HandlerlessProducer: a running worker publishes each
// task's payload schema in the registry, and a client without the task's
// handler (the CLI, the admin API of a producer) refuses a payload the
// worker would dead-letter.
func TestPublishedSchema_HandlerlessProducer(t *testing.T) {
	t.Parallel()
	const task = "t.Bill"
	h := queuemax.Define(task, queuemax.TaskOptions{}, func(context.Context, struct_params.BillArgs) error { return nil })
	ctx := t.Context()
	dir := t.TempDir()
	w, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{h}, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	prod, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	// Before any worker runs, nothing is known: the name is refused unless
	// the producer says to store it, and then any object is stored.
	early, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if _, err := early.Enqueue(ctx, task, json.RawMessage(`{"x":1}`), queuemax.Opts{}); !errors.Is(err, queuemax.ErrUnknownTask) {
		t.Fatalf("enqueue of an unpublished task = %v, want ErrUnknownTask", err)
	}
	if _, err := early.Enqueue(ctx, task, json.RawMessage(`{"x":1}`), queuemax.Opts{AllowUnknownTask: true}); err != nil {
		t.Fatalf("enqueue before a worker published: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ws, err := prod.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 1 && ws[0].Schemas[task] != nil {
			if string(ws[0].Schemas[task]) != string(queuemax.PayloadSchema(reflect.TypeFor[struct_params.BillArgs]())) {
				t.Errorf("published schema %s", ws[0].Schemas[task])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers = %+v, want one publishing %s's schema", ws, task)
		}
		time.Sleep(10 * time.Millisecond) // polling the registry for Run's first write
	}
	good, _ := json.Marshal(struct_params.BillArgs{Inv: struct_params.Invoice{Count: 2}})
	bad := strings.Replace(string(good), `"amount_cents":0`, `"amount_cents":"oops"`, 1)
	_, err = prod.Enqueue(ctx, task, json.RawMessage(bad), queuemax.Opts{})
	var pe *queuemax.PayloadShapeError
	if !errors.As(err, &pe) || pe.Field != "inv.amount_cents" {
		t.Errorf("bad payload from a handler-less producer: err = %v, want a *PayloadShapeError inside inv", err)
	}
	if _, err := prod.Enqueue(ctx, task, json.RawMessage(good), queuemax.Opts{}); err != nil {
		t.Errorf("good payload %s: %v", good, err)
	}
}
