package storetest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// testQueueLimitsArea checks what the engine's queue limits need of a
// claim: SkipQueues leaves the named queues out (ready and due jobs, with
// and without a task filter, over every shard), and is ignored when Queues
// is set.
func testQueueLimitsArea(t *testing.T, s *suite) {
	t.Run("ClaimSkipsQueues", func(t *testing.T) {
		t.Parallel()
		st := s.setup(t, 2).st
		ctx := t.Context()
		var jobs []store.InsertParams
		for i, q := range []string{"a", "b", "", "a", "b", ""} {
			jobs = append(jobs, store.InsertParams{Shard: i % 2, Task: "t." + store.QueueOf(q), Payload: json.RawMessage(`{}`),
				MaxAttempts: 1, Queue: q, Now: t0})
		}
		if _, err := st.Insert(ctx, jobs); err != nil {
			t.Fatalf("Insert: %v", err)
		}
		count := func(js []*store.Job) map[string]int {
			m := map[string]int{}
			for _, j := range js {
				m[j.Queue]++
			}
			return m
		}
		got, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 10, Now: t0, Tasks: []string{"t.a", "t.default"}, SkipQueues: []string{"a"}})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if diff := cmp.Diff(map[string]int{"default": 2}, count(got)); diff != "" {
			t.Errorf("Claim of tasks a, default skipping a (-want +got):\n%s", diff)
		}
		got, err = st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 10, Now: t0, SkipQueues: []string{"a", "zzz"}})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if diff := cmp.Diff(map[string]int{"b": 2}, count(got)); diff != "" {
			t.Errorf("Claim skipping a (-want +got):\n%s", diff)
		}
		got, err = st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 10, Now: t0, SkipQueues: []string{"b"},
			Queues: []store.QueueLimit{{Queue: "a", Max: 1}}})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if diff := cmp.Diff(map[string]int{"a": 1}, count(got)); diff != "" {
			t.Errorf("Claim with caps (SkipQueues ignored) (-want +got):\n%s", diff)
		}
	})
}
