package admission

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// TestRules_Derived: the engine takes a task's global rule, or its Key
// rule when it is limited per key with Key limits (whose global rule is
// then the task-wide Wide one); By lists the tasks limited per key.
func TestRules_Derived(t *testing.T) {
	t.Parallel()
	g := store.LimitRule{Concurrency: 4}
	k := store.LimitRule{Rate: 2, Per: time.Second}
	rs := Rules{
		"plain":    {Global: g},
		"byGlobal": {Global: g, By: "customer"},
		"byKey":    {Global: g, Key: k, By: "customer"},
		"keyOnly":  {Key: k, By: "shop"},
		"none":     {},
	}
	if got, want := rs.Engine(), map[string]store.LimitRule{"plain": g, "byGlobal": g, "byKey": k, "keyOnly": k}; !maps.Equal(got, want) {
		t.Errorf("Engine() = %v; want %v", got, want)
	}
	if got, want := rs.Wide(), map[string]store.LimitRule{"byKey": g}; !maps.Equal(got, want) {
		t.Errorf("Wide() = %v; want %v", got, want)
	}
	if got, want := rs.By(), map[string]string{"byGlobal": "customer", "byKey": "customer", "keyOnly": "shop"}; !maps.Equal(got, want) {
		t.Errorf("By() = %v; want %v", got, want)
	}
	if got := (Rules{"none": {}}).Engine(); got != nil {
		t.Errorf("Engine() without limits = %v; want nil", got)
	}
}

// TestTaskRule_Check refuses Key limits without By, a By without a limit
// or that is not a payload key name, and a bad rule, each as
// ErrInvalidLimit naming the task.
func TestTaskRule_Check(t *testing.T) {
	t.Parallel()
	for _, r := range []TaskRule{
		{Key: store.LimitRule{Concurrency: 1}},
		{By: "customer"},
		{Global: store.LimitRule{Concurrency: 1}, By: "a.b"},
		{Global: store.LimitRule{Concurrency: 1}, By: string(make([]byte, 65))},
		{Global: store.LimitRule{Rate: 3}},
	} {
		if err := r.Check("t.Bad"); !errors.Is(err, store.ErrInvalidLimit) {
			t.Errorf("Check(%+v) = %v; want ErrInvalidLimit", r, err)
		}
	}
	if err := (TaskRule{Global: store.LimitRule{Concurrency: 1}, By: "customer_id"}).Check("t.Ok"); err != nil {
		t.Errorf("Check of a good rule = %v", err)
	}
}
