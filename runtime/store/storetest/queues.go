package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/runtime/store"
)

// testQueuesArea runs the Queues area.
func testQueuesArea(t *testing.T, s *suite) {
	testQueues(t, func(shards int) store.Store { return s.setup(t, shards).st })
}

// testQueues checks named queues: the queue stored with each job (the
// default queue when none is given), claims capped per queue (ready and
// due scheduled jobs, priority order kept within and across queues),
// pause and resume (claims skip a paused queue on every shard, with or
// without caps; running jobs are untouched) and QueueList's counts.
func testQueues(t *testing.T, open func(shards int) store.Store) {
	t.Run("StoredWithJob", func(t *testing.T) {
		t.Parallel()
		st := open(2)
		ctx := t.Context()
		ids, err := st.Insert(ctx, []store.InsertParams{
			{Shard: 0, Task: "t.A", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Queue: "emails", Now: t0},
			{Shard: 1, Task: "t.B", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
		})
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		for i, want := range []string{"emails", store.DefaultQueue} {
			j, err := st.Job(ctx, ids[i])
			if err != nil {
				t.Fatalf("Job: %v", err)
			}
			if j.Queue != want {
				t.Errorf("Job(%v).Queue = %q, want %q", ids[i], j.Queue, want)
			}
		}
		jobs, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards})
		if err != nil {
			t.Fatalf("Jobs: %v", err)
		}
		got := map[string]string{}
		for _, j := range jobs {
			got[j.Task] = j.Queue
		}
		if diff := cmp.Diff(map[string]string{"t.A": "emails", "t.B": "default"}, got); diff != "" {
			t.Errorf("Jobs queues mismatch (-want +got):\n%s", diff)
		}
		claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: t0})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		got = map[string]string{}
		for _, j := range claimed {
			got[j.Task] = j.Queue
		}
		if diff := cmp.Diff(map[string]string{"t.A": "emails", "t.B": "default"}, got); diff != "" {
			t.Errorf("Claim queues mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ClaimCappedPerQueue", func(t *testing.T) {
		t.Parallel()
		st := open(1)
		ctx := t.Context()
		var jobs []store.InsertParams
		add := func(queue string, prio store.Priority, runAt time.Time) {
			jobs = append(jobs, store.InsertParams{Task: "t." + queue, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, len(jobs))),
				MaxAttempts: 1, Queue: queue, Priority: prio, RunAt: runAt, Now: t0})
		}
		for range 4 {
			add("a", store.PriorityLow, time.Time{})
			add("b", store.PriorityLow, time.Time{})
			add("", store.PriorityLow, time.Time{})
		}
		add("a", store.PriorityHigh, time.Time{})        // 12: first of a
		add("a", store.PriorityLow, t0.Add(time.Minute)) // 13: due at t0+1m
		ids, err := st.Insert(ctx, jobs)
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		claim := func(max int, qs ...store.QueueLimit) []*store.Job {
			t.Helper()
			got, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: max, Now: t0.Add(2 * time.Minute), Queues: qs})
			if err != nil {
				t.Fatalf("Claim(%v): %v", qs, err)
			}
			return got
		}
		count := func(js []*store.Job) map[string]int {
			m := map[string]int{}
			for _, j := range js {
				m[j.Queue]++
			}
			return m
		}
		got := claim(10, store.QueueLimit{Queue: "a", Max: 2}, store.QueueLimit{Queue: store.DefaultQueue, Max: 1}, store.QueueLimit{Queue: "b", Max: 0})
		if diff := cmp.Diff(map[string]int{"a": 2, "default": 1}, count(got)); diff != "" {
			t.Errorf("Claim a:2 default:1 b:0 mismatch (-want +got):\n%s", diff)
		}
		if len(got) > 0 && got[0].ID != ids[12] {
			t.Errorf("first claimed = %v, want the high-priority job %v", got[0].ID, ids[12])
		}
		// The total cap wins over the queues' caps.
		if got := claim(3, store.QueueLimit{Queue: "a", Max: 5}, store.QueueLimit{Queue: "b", Max: 5}); len(got) != 3 {
			t.Errorf("Claim Max 3 of caps 5+5 took %d jobs, want 3", len(got))
		}
		// An empty list claims nothing.
		if got := claim(10, []store.QueueLimit{}...); len(got) != 0 && got != nil {
			t.Errorf("Claim with no queues took %d jobs, want 0", len(got))
		}
		if got, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: t0, Queues: []store.QueueLimit{}}); err != nil || len(got) != 0 {
			t.Errorf("Claim(Queues: empty) = %d jobs, %v; want none", len(got), err)
		}
		// What is left: a's due scheduled job and the rest of a, b, default.
		rest := claim(100, store.QueueLimit{Queue: "a", Max: 100}, store.QueueLimit{Queue: "b", Max: 100}, store.QueueLimit{Queue: store.DefaultQueue, Max: 100})
		if n := len(got) + 3 + len(rest); n != len(jobs) {
			t.Errorf("claimed %d jobs in all, want %d", n, len(jobs))
		}
		seen := false
		for _, j := range rest {
			seen = seen || j.ID == ids[13]
		}
		if !seen {
			t.Errorf("the due scheduled job of queue a was not claimed")
		}
	})

	t.Run("CapsSpanShards", func(t *testing.T) {
		t.Parallel()
		st := open(3)
		ctx := t.Context()
		var jobs []store.InsertParams
		for i := range 9 {
			jobs = append(jobs, store.InsertParams{Shard: i % 3, Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Queue: "a", Now: t0})
		}
		if _, err := st.Insert(ctx, jobs); err != nil {
			t.Fatalf("Insert: %v", err)
		}
		got, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 9, Now: t0, Order: []int{0, 1, 2},
			Queues: []store.QueueLimit{{Queue: "a", Max: 4}}})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if len(got) != 4 {
			t.Errorf("Claim of a:4 over 3 shards took %d jobs, want 4", len(got))
		}
	})

	t.Run("ClaimOrderAcrossQueues", func(t *testing.T) {
		t.Parallel()
		st := open(1)
		ctx := t.Context()
		// Jobs of the default queue and of named queues, interleaved, of
		// two priorities; the paused queue p's jobs come first.
		type job struct {
			queue, task string
			prio        store.Priority
		}
		var ins []store.InsertParams
		for _, j := range []job{
			{"p", "t", store.PriorityLow}, {"", "t", store.PriorityLow}, {"a", "t", store.PriorityHigh},
			{"b", "t", store.PriorityLow}, {"", "t", store.PriorityHigh}, {"p", "t", store.PriorityHigh},
			{"a", "t", store.PriorityLow}, {"", "t.x", store.PriorityLow}, {"b", "t.x", store.PriorityHigh},
		} {
			ins = append(ins, store.InsertParams{Task: j.task, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Queue: j.queue, Priority: j.prio, Now: t0})
		}
		ids, err := st.Insert(ctx, ins)
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		claim := func(what string, p store.ClaimParams, want ...int) {
			t.Helper()
			p.WorkerID, p.Now = "w1", t0
			got, err := st.Claim(ctx, p)
			if err != nil {
				t.Fatalf("Claim %s: %v", what, err)
			}
			var gotIDs, wantIDs []store.JobID
			for _, j := range got {
				gotIDs = append(gotIDs, j.ID)
			}
			for _, i := range want {
				wantIDs = append(wantIDs, ids[i])
			}
			if diff := cmp.Diff(wantIDs, gotIDs); diff != "" {
				t.Errorf("Claim %s mismatch (-want +got):\n%s", what, diff)
			}
		}
		if err := st.QueuePause(ctx, "p", t0); err != nil {
			t.Fatalf("QueuePause: %v", err)
		}
		claim("first two, p paused", store.ClaimParams{Max: 2}, 2, 4)
		claim("task t.x", store.ClaimParams{Max: 5, Tasks: []string{"t.x"}}, 8, 7)
		if err := st.QueuePause(ctx, store.DefaultQueue, t0); err != nil {
			t.Fatalf("QueuePause: %v", err)
		}
		claim("p and default paused", store.ClaimParams{Max: 10}, 3, 6)
		for _, q := range []string{"p", store.DefaultQueue} {
			if err := st.QueueResume(ctx, q, t0); err != nil {
				t.Fatalf("QueueResume: %v", err)
			}
		}
		claim("the rest, skipping b", store.ClaimParams{Max: 10, SkipQueues: []string{"b"}}, 5, 0, 1)
		// A scheduled job of a named queue that came due is promoted and
		// claimed by the same claim, with no other job pending.
		due, err := st.Insert(ctx, []store.InsertParams{{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1,
			Queue: "a", RunAt: t0.Add(-time.Second), Now: t0.Add(-time.Minute)}})
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		ids = append(ids, due...)
		claim("the due job of a", store.ClaimParams{Max: 10}, len(ids)-1)
	})

	t.Run("PauseAndResume", func(t *testing.T) {
		t.Parallel()
		st := open(3)
		ctx := t.Context()
		var jobs []store.InsertParams
		for i := range 6 {
			for _, q := range []string{"a", "b"} {
				jobs = append(jobs, store.InsertParams{Shard: i % 3, Task: "t." + q, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Queue: q, Now: t0})
			}
		}
		if _, err := st.Insert(ctx, jobs); err != nil {
			t.Fatalf("Insert: %v", err)
		}
		// One job of a runs before the pause and is not affected by it.
		running, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 1, Now: t0, Queues: []store.QueueLimit{{Queue: "a", Max: 1}}})
		if err != nil || len(running) != 1 {
			t.Fatalf("Claim one of a = %d jobs, %v", len(running), err)
		}
		for range 2 { // pausing twice changes nothing
			if err := st.QueuePause(ctx, "a", t0.Add(time.Second)); err != nil {
				t.Fatalf("QueuePause: %v", err)
			}
		}
		if err := st.QueueResume(ctx, "never-paused", t0); err != nil {
			t.Errorf("QueueResume of a queue never paused: %v", err)
		}
		if err := st.QueuePause(ctx, "Bad Name", t0); !errors.Is(err, store.ErrInvalidQueue) {
			t.Errorf("QueuePause(%q) error = %v, want ErrInvalidQueue", "Bad Name", err)
		}
		qs, err := st.QueueList(ctx)
		if err != nil {
			t.Fatalf("QueueList: %v", err)
		}
		want := []store.QueueState{
			{Name: "a", Pending: 5, Processing: 1, Paused: true, PausedAt: t0.Add(time.Second), UpdatedAt: t0.Add(time.Second)},
			{Name: "b", Pending: 6},
		}
		if diff := cmp.Diff(want, qs, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
			t.Errorf("QueueList after pause mismatch (-want +got):\n%s", diff)
		}
		claimed := map[string]int{}
		for _, p := range []store.ClaimParams{
			{WorkerID: "w2", Max: 3, Now: t0.Add(time.Minute)}, // any queue
			{WorkerID: "w2", Max: 100, Now: t0.Add(time.Minute), Queues: []store.QueueLimit{{Queue: "a", Max: 100}, {Queue: "b", Max: 100}}},
			{WorkerID: "w2", Max: 100, Now: t0.Add(time.Minute)},
		} {
			got, err := st.Claim(ctx, p)
			if err != nil {
				t.Fatalf("Claim while a is paused: %v", err)
			}
			for _, j := range got {
				claimed[j.Queue]++
			}
		}
		if diff := cmp.Diff(map[string]int{"b": 6}, claimed); diff != "" {
			t.Errorf("claims while a is paused mismatch (-want +got):\n%s", diff)
		}
		if errs := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: running[0].ID, Token: running[0].Lease}, Now: t0.Add(time.Minute)}}); errs[0] != nil {
			t.Errorf("Complete of a's running job while paused: %v", errs[0])
		}
		if err := st.QueueResume(ctx, "a", t0.Add(2*time.Minute)); err != nil {
			t.Fatalf("QueueResume: %v", err)
		}
		got, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w3", Max: 100, Now: t0.Add(2 * time.Minute)})
		if err != nil {
			t.Fatalf("Claim after resume: %v", err)
		}
		if len(got) != 5 {
			t.Errorf("Claim after resume took %d jobs, want a's 5", len(got))
		}
		qs, err = st.QueueList(ctx)
		if err != nil {
			t.Fatalf("QueueList: %v", err)
		}
		want = []store.QueueState{
			{Name: "a", Processing: 5, UpdatedAt: t0.Add(2 * time.Minute)},
			{Name: "b", Processing: 6},
		}
		if diff := cmp.Diff(want, qs, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
			t.Errorf("QueueList after resume mismatch (-want +got):\n%s", diff)
		}
	})
}
