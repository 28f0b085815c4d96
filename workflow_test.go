package queuemax

import (
	"errors"
	"strings"
	"testing"
)

func TestWorkflow_Validate(t *testing.T) {
	type add struct {
		step string
		opts []StepOption
	}
	cases := []struct {
		name    string
		adds    []add
		addErr  string // error of the last Add
		wantErr string // error of Validate ("" = valid)
	}{
		{name: "fan-out and fan-in", adds: []add{{"a", nil}, {"b", []StepOption{After("a")}}, {"c", []StepOption{After("a")}}, {"d", []StepOption{After("b", "c")}}}},
		{name: "forward reference", adds: []add{{"b", []StepOption{After("a")}}, {"a", nil}}},
		{name: "duplicate", adds: []add{{"a", nil}, {"a", nil}}, addErr: `step "a" is added twice`, wantErr: `step "a" is added twice`},
		{name: "self", adds: []add{{"a", []StepOption{AfterSettled("a")}}}, addErr: `step "a" depends on itself`, wantErr: `step "a" depends on itself`},
		{name: "unknown", adds: []add{{"a", nil}, {"b", []StepOption{After("a", "zz")}}}, wantErr: `step "b" depends on unknown step "zz"`},
		{name: "unknown by bind", adds: []add{{"a", []StepOption{Bind("x", "zz")}}}, wantErr: `step "a" depends on unknown step "zz"`},
		{name: "cycle", adds: []add{{"a", []StepOption{After("c")}}, {"b", []StepOption{After("a")}}, {"c", []StepOption{After("b")}}}, wantErr: "cycle a -> c -> b -> a"},
		{name: "empty name", adds: []add{{"", nil}}, addErr: "empty name", wantErr: "empty name"},
		{name: "no steps", wantErr: "no steps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWorkflow("wf")
			var err error
			for _, a := range tc.adds {
				err = w.Add(a.step, "t", map[string]int{}, a.opts...)
			}
			if tc.addErr == "" && err != nil {
				t.Fatalf("Add: %v", err)
			}
			if tc.addErr != "" && (err == nil || !strings.Contains(err.Error(), tc.addErr) || !errors.Is(err, ErrInvalidWorkflow)) {
				t.Fatalf("Add error = %v, want ErrInvalidWorkflow containing %q", err, tc.addErr)
			}
			err = w.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidWorkflow) {
				t.Fatalf("Validate error = %v, want ErrInvalidWorkflow containing %q", err, tc.wantErr)
			}
		})
	}
}
