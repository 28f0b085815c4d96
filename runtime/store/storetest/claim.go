package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/runtime/store"
)

// testClaimArea runs the Claim area: claim takes ready jobs by priority then FIFO, filtered by task, never twice, and fills the claimed fields.
func testClaimArea(t *testing.T, s *suite) {
	t.Run("PriorityThenFIFO", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		in := insert(t, b,
			store.InsertParams{Priority: store.PriorityLow},
			store.InsertParams{Priority: store.PriorityHigh},
			store.InsertParams{Priority: store.PriorityMedium},
			store.InsertParams{Priority: store.PriorityHigh},
		)
		got := claim(t, b, 3, t0)
		if diff := cmp.Diff([]store.JobID{in[1], in[3], in[2]}, ids(got)); diff != "" {
			t.Errorf("Claim order mismatch (-want +got):\n%s", diff)
		}
		// A claim is stamped with Now plus the time it waited for the
		// write lock (so a slow commit does not look stuck).
		soon := func(ts time.Time) bool { return !ts.Before(t0) && ts.Before(t0.Add(10*time.Second)) }
		for _, j := range got {
			if j.Status != store.StatusProcessing || j.Attempts != 1 || j.WorkerID != "w1" || j.Lease == 0 ||
				!soon(j.StartedAt) || !soon(j.Heartbeat) {
				t.Errorf("claimed job = %+v, want processing, attempt 1, worker w1, a lease, started now", j)
			}
		}
		rest := claim(t, b, 10, t0)
		if diff := cmp.Diff([]store.JobID{in[0]}, ids(rest)); diff != "" {
			t.Errorf("second Claim mismatch (-want +got):\n%s", diff)
		}
		if more := claim(t, b, 10, t0); len(more) != 0 {
			t.Errorf("Claim on empty queue = %d jobs, want 0", len(more))
		}
	})

	t.Run("FilteredByTasks", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		in := insert(t, b,
			store.InsertParams{Task: "a"},
			store.InsertParams{Task: "b"},
			store.InsertParams{Task: "c"},
			store.InsertParams{Task: "a"},
			store.InsertParams{},
			store.InsertParams{Task: "b"},
		)
		claimTasks := func(max int, tasks ...string) []store.JobID {
			t.Helper()
			jobs, err := b.st.Claim(b.ctx, store.ClaimParams{WorkerID: "w1", Max: max, Now: t0, Tasks: tasks})
			if err != nil {
				t.Fatalf("Claim(tasks %q): %v", tasks, err)
			}
			for _, j := range jobs {
				if len(tasks) > 0 && !slices.Contains(tasks, j.Task) {
					t.Errorf("Claim(tasks %q) returned job %d of task %q", tasks, j.ID, j.Task)
				}
			}
			return ids(jobs)
		}
		// Each filter is run twice, so that a statement cached for a
		// number of tasks is reused with other names.
		if diff := cmp.Diff([]store.JobID{in[0]}, claimTasks(1, "a")); diff != "" {
			t.Errorf("Claim(a) mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]store.JobID{in[1], in[2]}, claimTasks(2, "c", "b")); diff != "" {
			t.Errorf("Claim(c, b) mismatch (-want +got):\n%s", diff)
		}
		if got := claimTasks(10, "x", "y", "z"); len(got) != 0 {
			t.Errorf("Claim(x, y, z) = %v, want none", got)
		}
		if diff := cmp.Diff([]store.JobID{in[3]}, claimTasks(10, "a")); diff != "" {
			t.Errorf("second Claim(a) mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]store.JobID{in[5]}, claimTasks(10, "b", "c")); diff != "" {
			t.Errorf("second Claim(b, c) mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]store.JobID{in[4]}, claimTasks(10)); diff != "" {
			t.Errorf("unfiltered Claim mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("VisitsShardsInOrder", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 3)
		in := insert(t, b,
			store.InsertParams{Shard: 0}, store.InsertParams{Shard: 1}, store.InsertParams{Shard: 2},
			store.InsertParams{Shard: 1},
		)
		for _, tt := range []struct {
			order []int
			max   int
			want  []store.JobID
		}{
			{[]int{1, 0, 2}, 1, []store.JobID{in[1]}},
			{[]int{2, 1, 0}, 2, []store.JobID{in[2], in[3]}},
			{[]int{1, 2, 0}, 5, []store.JobID{in[0]}},
		} {
			jobs, err := b.st.Claim(b.ctx, store.ClaimParams{WorkerID: "w1", Max: tt.max, Now: t0, Order: tt.order})
			if err != nil {
				t.Fatalf("Claim(order %v): %v", tt.order, err)
			}
			if diff := cmp.Diff(tt.want, ids(jobs)); diff != "" {
				t.Errorf("Claim(order %v, max %d) mismatch (-want +got):\n%s", tt.order, tt.max, diff)
			}
		}
	})

	t.Run("ScheduledInvisibleUntilDue", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		in := insert(t, b, store.InsertParams{Shard: 1, RunAt: t0.Add(time.Minute)})
		if s := stats(t, b); s.Scheduled != 1 || s.Pending != 0 {
			t.Errorf("stats = %+v, want 1 scheduled", counts(s))
		}
		if got := claim(t, b, 10, t0.Add(59*time.Second)); len(got) != 0 {
			t.Fatalf("Claim before due = %v, want none", ids(got))
		}
		due, ok, err := b.st.NextDue(b.ctx)
		if err != nil || !ok || !due.Equal(t0.Add(time.Minute)) {
			t.Errorf("NextDue = %v, %v, %v; want %v, true, nil", due, ok, err, t0.Add(time.Minute))
		}
		got := claim(t, b, 10, t0.Add(time.Minute))
		if diff := cmp.Diff(in, ids(got)); diff != "" {
			t.Errorf("Claim when due mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ConcurrentNeverDuplicate", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 4)
		const n = 2000
		ps := make([]store.InsertParams, n)
		for i := range ps {
			ps[i].Shard = i % 4
		}
		insert(t, b, ps...)
		var mu sync.Mutex
		seen := make(map[store.JobID]int)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for {
					jobs, err := b.st.Claim(b.ctx, store.ClaimParams{WorkerID: fmt.Sprint("w", w), Max: 16, Now: t0})
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if len(jobs) == 0 {
						return
					}
					acks := make([]store.CompleteParams, len(jobs))
					for i, j := range jobs {
						acks[i] = store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Now: t0}
					}
					for _, err := range b.st.Complete(b.ctx, acks) {
						if err != nil {
							t.Errorf("Complete: %v", err)
						}
					}
					mu.Lock()
					for _, j := range jobs {
						seen[j.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != n {
			t.Errorf("claimed %d distinct jobs, want %d", len(seen), n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("job %d claimed %d times", id, c)
			}
		}
		if s := stats(t, b); s.TotalProcessed != n || s.Pending != 0 {
			t.Errorf("processed=%d pending=%d, want %d and 0", s.TotalProcessed, s.Pending, n)
		}
	})

	t.Run("UnnamedTask", func(t *testing.T) {
		t.Parallel()
		testClaimUnnamedTask(t, s.setup(t, 1).st)
	})

	t.Run("ClaimedFields", func(t *testing.T) {
		t.Parallel()
		testClaimedFields(t, s.setup(t, 1).st)
	})

	t.Run("DataVersionSeesCommits", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		v1, err := b.st.DataVersion(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		insert(t, b, store.InsertParams{Shard: 1})
		v2, err := b.st.DataVersion(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v1 == v2 {
			t.Errorf("DataVersion unchanged after an insert (%d)", v1)
		}
	})
}

// testClaimedFields checks that a claimed job carries what Job reads back
// for it, except the fields a claim leaves out (ErrorStack, Result and
// CompletedAt, which a claim clears).
func testClaimedFields(t *testing.T, st store.Store) {
	ctx := t.Context()
	key := int64(42)
	ids, err := st.Insert(ctx, []store.InsertParams{{Task: "a", Payload: json.RawMessage(`{"x":1}`), PartitionKey: &key,
		Priority: store.PriorityHigh, MaxAttempts: 5, RetryDelay: 7 * time.Second, Metadata: json.RawMessage(`{"m":"v"}`), Now: t0}})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	claimOne := func(now time.Time) *store.Job {
		t.Helper()
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: now})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %d jobs, %v; want 1", len(jobs), err)
		}
		return jobs[0]
	}
	check := func(c *store.Job) {
		t.Helper()
		got, err := st.Job(ctx, c.ID)
		if err != nil {
			t.Fatalf("Job: %v", err)
		}
		if diff := cmp.Diff(got, c, cmpopts.IgnoreFields(store.Job{}, "ErrorStack", "Result", "CompletedAt"),
			cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("claimed job differs from Job (-Job +claimed):\n%s", diff)
		}
	}
	j := claimOne(t0.Add(time.Second))
	if j.ID != ids[0] || j.Attempts != 1 || j.WorkerID != "w1" || j.Lease == 0 || j.Status != store.StatusProcessing {
		t.Fatalf("claimed %+v", j)
	}
	check(j)
	// A second attempt, after a retry that recorded an error and a retry
	// time.
	if err := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"},
		Error: "boom", ErrorType: "E", Stack: "stack", RetryAt: t0.Add(time.Minute), Now: t0.Add(2 * time.Second)}})[0]; err != nil {
		t.Fatalf("Fail: %v", err)
	}
	j = claimOne(t0.Add(2 * time.Minute))
	if j.Attempts != 2 || j.LastError != "boom" || j.ErrorType != "E" || j.NextRetryAt.IsZero() {
		t.Fatalf("second claim = %+v; want attempt 2 with the last error and retry time", j)
	}
	check(j)
}

// testClaimUnnamedTask checks that the task name "" in ClaimParams.Tasks
// claims jobs stored without a task, and only those.
func testClaimUnnamedTask(t *testing.T, st store.Store) {
	ctx := t.Context()
	ids, err := st.Insert(ctx, []store.InsertParams{
		{Task: "a", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
		{Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
		{Task: "b", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0},
	})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	claim := func(tasks ...string) []store.JobID {
		t.Helper()
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: t0, Tasks: tasks})
		if err != nil {
			t.Fatalf("Claim(%q): %v", tasks, err)
		}
		var out []store.JobID
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	if diff := cmp.Diff([]store.JobID{ids[1]}, claim("")); diff != "" {
		t.Errorf(`Claim("") (-want +got):\n%s`, diff)
	}
	if diff := cmp.Diff([]store.JobID{ids[2]}, claim("", "b")); diff != "" {
		t.Errorf(`Claim("", "b") (-want +got):\n%s`, diff)
	}
	if got := claim("", "a", "b"); len(got) != 1 || got[0] != ids[0] {
		t.Errorf(`Claim("", "a", "b") = %v, want only %v`, got, ids[0])
	}
}
