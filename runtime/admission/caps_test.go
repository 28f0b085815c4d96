package admission

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
)

// TestCaps_Limits: each named queue may hold its cap, the default queue
// the rest of the engine's limit; a queue at its cap is left out of the
// claim's queues, and a job leaving a queue at its cap signals Freed.
func TestCaps_Limits(t *testing.T) {
	t.Parallel()
	var limit atomic.Int64
	limit.Store(4)
	c := New(Config{Queues: map[string]int{"flood": 1, "idle": 1}}, Host{Limit: &limit, Executing: new(atomic.Int64), Wake: func() {}})
	want := []store.QueueLimit{{Queue: "flood", Max: 1}, {Queue: "idle", Max: 1}, {Queue: store.DefaultQueue, Max: 2}}
	if got := c.queues.limits(); !slices.Equal(got, want) {
		t.Fatalf("limits() = %v; want %v", got, want)
	}
	c.Held("flood", 1)
	c.Held("", 1)
	c.Held("", 1)
	if got := c.queues.limits(); !slices.Equal(got, []store.QueueLimit{{Queue: "idle", Max: 1}}) {
		t.Errorf("limits() with flood and default at their caps = %v; want only idle:1", got)
	}
	select {
	case <-c.Freed():
		t.Fatal("Freed signalled before a slot came free")
	default:
	}
	c.Held("flood", -1)
	select {
	case <-c.Freed():
	default:
		t.Error("Freed not signalled when flood left its cap")
	}
	limit.Store(8) // autoscaled: the default queue gets the rest
	if got := c.queues.limits(); !slices.Equal(got, []store.QueueLimit{{Queue: "flood", Max: 1}, {Queue: "idle", Max: 1}, {Queue: store.DefaultQueue, Max: 4}}) {
		t.Errorf("limits() at limit 8 = %v; want default 4", got)
	}
}
