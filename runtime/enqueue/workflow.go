package enqueue

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/queuemax/queuemax/runtime/store"
)

// ErrInvalidWorkflow is wrapped by the errors of a workflow that cannot
// be stored; the root package re-exports it.
var ErrInvalidWorkflow = errors.New("queuemax: invalid workflow")

// Deps returns every step a workflow step waits for (after, then settled,
// then the steps its bindings read), each once, in the order first named.
func Deps(after, settled, bindFrom []string) []string {
	var out []string
	for _, list := range [][]string{after, settled, bindFrom} {
		for _, n := range list {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// CheckGraph reports the first problem of the dependency graph of
// workflow name, whose step i is names[i] and waits for deps[i]: no
// steps, a dependency on an unknown step, or a cycle (named step by
// step). The error wraps ErrInvalidWorkflow.
func CheckGraph(name string, names []string, deps [][]string) error {
	if len(names) == 0 {
		return fmt.Errorf("%w %q: no steps", ErrInvalidWorkflow, name)
	}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	for i, ds := range deps {
		for _, d := range ds {
			if _, ok := index[d]; !ok {
				return fmt.Errorf("%w %q: step %q depends on unknown step %q", ErrInvalidWorkflow, name, names[i], d)
			}
		}
	}
	if cyc := cycle(names, deps, index); cyc != nil {
		return fmt.Errorf("%w %q: cycle %s", ErrInvalidWorkflow, name, strings.Join(cyc, " -> "))
	}
	return nil
}

// cycle returns the steps of one dependency cycle, first step repeated at
// the end (a -> b -> a), or nil if there is none.
func cycle(names []string, deps [][]string, index map[string]int) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(names))
	var path []int
	var found []string
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = onPath
		path = append(path, i)
		for _, d := range deps[i] {
			j := index[d]
			switch state[j] {
			case onPath:
				start := slices.Index(path, j)
				for _, k := range path[start:] {
					found = append(found, names[k])
				}
				found = append(found, names[j])
				return true
			case unseen:
				if visit(j) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return false
	}
	for i := range names {
		if state[i] == unseen && visit(i) {
			return found
		}
	}
	return nil
}

// CheckStep checks one step of workflow name whose job Resolve made: a
// unique job cannot be a step, and a step that binds parameters needs a
// JSON object as its payload and parameter names without '"' or '\'.
func CheckStep(name string, st *store.WorkflowStepParams) error {
	for _, b := range st.Binds {
		if strings.ContainsAny(b.Param, "\"\\") {
			return fmt.Errorf("%w %q: step %q binds parameter %q: a parameter name cannot hold '\"' or '\\'",
				ErrInvalidWorkflow, name, st.Name, b.Param)
		}
	}
	if st.Job.Unique != nil {
		return fmt.Errorf("%w %q: step %q: task %q makes unique jobs, which cannot be workflow steps",
			ErrInvalidWorkflow, name, st.Name, st.Job.Task)
	}
	if len(st.Binds) > 0 && !strings.HasPrefix(strings.TrimSpace(string(st.Job.Payload)), "{") {
		return fmt.Errorf("%w %q: step %q binds parameters but its payload is not a JSON object",
			ErrInvalidWorkflow, name, st.Name)
	}
	return nil
}

// CheckStepAdd checks step name of workflow wf as queuemax.Workflow.Add
// adds it: a name, a task, not added before (added), no dependency on
// itself among deps, and a parameter name in each of binds.
func CheckStepAdd(wf, name, task string, added bool, deps []string, binds []store.WorkflowBind) error {
	switch {
	case name == "":
		return fmt.Errorf("%w %q: a step has an empty name", ErrInvalidWorkflow, wf)
	case task == "":
		return fmt.Errorf("%w %q: step %q has no task", ErrInvalidWorkflow, wf, name)
	}
	if added {
		return fmt.Errorf("%w %q: step %q is added twice", ErrInvalidWorkflow, wf, name)
	}
	for _, d := range deps {
		if d == name {
			return fmt.Errorf("%w %q: step %q depends on itself", ErrInvalidWorkflow, wf, name)
		}
	}
	for _, b := range binds {
		if b.Param == "" {
			return fmt.Errorf("%w %q: step %q binds an empty parameter name to step %q", ErrInvalidWorkflow, wf, name, b.From)
		}
	}
	return nil
}
