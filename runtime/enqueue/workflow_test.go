package enqueue

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
)

// TestCheckGraph names the problem of a workflow's dependency graph: no
// steps, an unknown step, a cycle (step by step).
func TestCheckGraph(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		names []string
		deps  [][]string
		want  string // "" for no error
	}{
		{nil, nil, "no steps"},
		{[]string{"a", "b"}, [][]string{nil, {"a"}}, ""},
		{[]string{"a"}, [][]string{{"x"}}, `step "a" depends on unknown step "x"`},
		{[]string{"a", "b", "c"}, [][]string{{"c"}, {"a"}, {"b"}}, "cycle a -> c -> b -> a"},
	} {
		err := CheckGraph("wf", tc.names, tc.deps)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckGraph(%v, %v) = %v; want nil", tc.names, tc.deps, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckGraph(%v, %v) = %v; want ErrInvalidWorkflow with %q", tc.names, tc.deps, err, tc.want)
		}
	}
	if got := Deps([]string{"a", "b"}, []string{"b", "c"}, []string{"a", "d"}); strings.Join(got, ",") != "a,b,c,d" {
		t.Errorf("Deps = %v; want a,b,c,d (each once, in order first named)", got)
	}
}

// TestCheckStep refuses a unique job as a step, a binding into a payload
// that is not an object, and a parameter name with a quote or backslash.
func TestCheckStep(t *testing.T) {
	t.Parallel()
	step := func(payload string, unique bool, params ...string) *store.WorkflowStepParams {
		st := &store.WorkflowStepParams{Name: "s", Job: store.InsertParams{Task: "t", Payload: json.RawMessage(payload)}}
		if unique {
			st.Job.Unique = &store.UniqueParams{Key: "k"}
		}
		for _, p := range params {
			st.Binds = append(st.Binds, store.WorkflowBind{Param: p, From: "a"})
		}
		return st
	}
	for name, tc := range map[string]struct {
		st   *store.WorkflowStepParams
		want string
	}{
		"plain":        {step(`{}`, false, "x"), ""},
		"unique":       {step(`{}`, true), "unique jobs"},
		"not object":   {step(` [1]`, false, "x"), "not a JSON object"},
		"no binds":     {step(`[1]`, false), ""},
		"quoted param": {step(`{}`, false, `a"b`), "cannot hold"},
	} {
		err := CheckStep("wf", tc.st)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: CheckStep = %v; want %q", name, err, tc.want)
		}
	}
}
