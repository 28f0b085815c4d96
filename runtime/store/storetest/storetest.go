// Package storetest is the conformance suite every store.Store
// implementation must pass. An implementation's test calls Run with a
// constructor that opens a fresh, empty store.
//
// Not API: import github.com/queuemax/queuemax instead.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Opener opens a fresh, empty store with the given number of shards. The
// test closes it.
type Opener func(t *testing.T, shards int) store.Store

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	type testBundle struct {
		st  store.Store
		ctx context.Context
	}
	setup := func(t *testing.T, shards int) *testBundle {
		t.Helper()
		st := open(t, shards)
		t.Cleanup(func() { st.Close() })
		return &testBundle{st: st, ctx: t.Context()}
	}
	insert := func(t *testing.T, b *testBundle, jobs ...store.InsertParams) []store.JobID {
		t.Helper()
		for i := range jobs {
			if jobs[i].Payload == nil {
				jobs[i].Payload = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
			}
			if jobs[i].MaxAttempts == 0 {
				jobs[i].MaxAttempts = 4
			}
			if jobs[i].Now.IsZero() {
				jobs[i].Now = t0
			}
		}
		ids, err := b.st.Insert(b.ctx, jobs)
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		return ids
	}
	claim := func(t *testing.T, b *testBundle, max int, now time.Time) []*store.Job {
		t.Helper()
		jobs, err := b.st.Claim(b.ctx, store.ClaimParams{WorkerID: "w1", Max: max, Now: now})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return jobs
	}
	ids := func(jobs []*store.Job) []store.JobID {
		out := make([]store.JobID, len(jobs))
		for i, j := range jobs {
			out[i] = j.ID
		}
		return out
	}
	stats := func(t *testing.T, b *testBundle) store.ShardStats {
		t.Helper()
		ss, err := b.st.Stats(b.ctx)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		for _, s := range ss {
			if !s.Healthy {
				t.Fatalf("shard %d unhealthy: %s", s.Shard, s.LastError)
			}
		}
		return queuemaxtype.SumShards(ss)
	}
	counts := func(s store.ShardStats) [6]int64 {
		return [6]int64{s.Pending, s.Scheduled, s.Processing, s.Failed, s.Completed, s.DeadLetters}
	}

	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 3)
		key := int64(-1)
		got := insert(t, b, store.InsertParams{Shard: 2, Task: "t.A", Payload: json.RawMessage(`{"a":1}`),
			PartitionKey: &key, Priority: store.PriorityHigh, MaxAttempts: 1, RetryDelay: 5 * time.Second})
		if got[0].Shard() != 2 {
			t.Fatalf("Insert ID shard = %d, want 2", got[0].Shard())
		}
		j, err := b.st.Job(b.ctx, got[0])
		if err != nil {
			t.Fatalf("Job: %v", err)
		}
		want := &store.Job{ID: got[0], Shard: 2, Task: "t.A", Payload: json.RawMessage(`{"a":1}`), PartitionKey: &key,
			Status: store.StatusPending, Priority: store.PriorityHigh, MaxAttempts: 1, RetryDelay: 5 * time.Second, CreatedAt: t0, Queue: store.DefaultQueue}
		if diff := cmp.Diff(want, j); diff != "" {
			t.Errorf("Job mismatch (-want +got):\n%s", diff)
		}
		if _, err := b.st.Job(b.ctx, store.NewJobID(1, 999)); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("Job(missing) error = %v, want ErrJobNotFound", err)
		}
		if _, err := b.st.Insert(b.ctx, []store.InsertParams{{Shard: 3, Payload: json.RawMessage(`{}`), Now: t0}}); !errors.Is(err, store.ErrInvalidShard) {
			t.Errorf("Insert(shard 3 of 3) error = %v, want ErrInvalidShard", err)
		}
	})

	t.Run("ClaimPriorityThenFIFO", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
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

	t.Run("ClaimFilteredByTasks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
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

	t.Run("ClaimVisitsShardsInOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 3)
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
		b := setup(t, 2)
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

	t.Run("CompleteDeletesOrKeepsResult", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		insert(t, b, store.InsertParams{}, store.InsertParams{})
		got := claim(t, b, 2, t0)
		errs := b.st.Complete(b.ctx, []store.CompleteParams{
			{Lease: store.Lease{ID: got[0].ID, Token: got[0].Lease}, Now: t0},
			{Lease: store.Lease{ID: got[1].ID, Token: got[1].Lease}, Result: json.RawMessage(`{"ok":true}`), Now: t0.Add(time.Second)},
		})
		if diff := cmp.Diff([]error{nil, nil}, errs, cmpErrors); diff != "" {
			t.Fatalf("Complete errors mismatch (-want +got):\n%s", diff)
		}
		if _, err := b.st.Job(b.ctx, got[0].ID); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("completed job without result: Job error = %v, want ErrJobNotFound", err)
		}
		j, err := b.st.Job(b.ctx, got[1].ID)
		if err != nil {
			t.Fatalf("Job: %v", err)
		}
		if j.Status != store.StatusCompleted || string(j.Result) != `{"ok":true}` || !j.CompletedAt.Equal(t0.Add(time.Second)) {
			t.Errorf("completed job = %s %s %v, want completed with result", j.Status, j.Result, j.CompletedAt)
		}
		if s := stats(t, b); s.TotalProcessed != 2 || s.Completed != 1 {
			t.Errorf("stats processed=%d completed=%d, want 2 and 1", s.TotalProcessed, s.Completed)
		}
		// A second acknowledgement of the same claim changes nothing.
		errs = b.st.Complete(b.ctx, []store.CompleteParams{{Lease: store.Lease{ID: got[1].ID, Token: got[1].Lease}, Now: t0}})
		if !errors.Is(errs[0], store.ErrLeaseLost) {
			t.Errorf("second Complete error = %v, want ErrLeaseLost", errs[0])
		}
		if s := stats(t, b); s.TotalProcessed != 2 {
			t.Errorf("processed after rejected ack = %d, want 2", s.TotalProcessed)
		}
	})

	t.Run("FailRetryThenDead", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		in := insert(t, b, store.InsertParams{Task: "t.F", MaxAttempts: 2})
		j := claim(t, b, 1, t0)[0]
		errs := b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Error: "boom",
			ErrorType: "*errors.errorString", RetryAt: t0.Add(2 * time.Minute), Now: t0}})
		if errs[0] != nil {
			t.Fatalf("Fail(retry): %v", errs[0])
		}
		got, _ := b.st.Job(b.ctx, in[0])
		if got.Status != store.StatusScheduled || !got.NextRetryAt.Equal(t0.Add(2*time.Minute)) || got.LastError != "boom" || got.Lease != 0 {
			t.Errorf("after retryable failure job = %s next=%v err=%q lease=%d, want scheduled at +2m", got.Status, got.NextRetryAt, got.LastError, got.Lease)
		}
		if c := claim(t, b, 1, t0.Add(time.Minute)); len(c) != 0 {
			t.Fatalf("Claim before retry time = %d jobs, want 0", len(c))
		}
		j = claim(t, b, 1, t0.Add(2*time.Minute))[0]
		if j.Attempts != 2 || j.LastError != "boom" {
			t.Errorf("second claim attempts=%d last_error=%q, want 2 and boom", j.Attempts, j.LastError)
		}
		errs = b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Error: "boom again",
			ErrorType: "E", Stack: "stack", Dead: true, Now: t0.Add(3 * time.Minute)}})
		if errs[0] != nil {
			t.Fatalf("Fail(dead): %v", errs[0])
		}
		if s := stats(t, b); counts(s) != [6]int64{0, 0, 0, 1, 0, 1} || s.TotalFailed != 1 {
			t.Errorf("stats = %v failed=%d, want 1 failed, 1 dead letter", counts(s), s.TotalFailed)
		}
		dl, err := b.st.DeadLetters(b.ctx, store.ListParams{Shard: store.AllShards})
		if err != nil || len(dl) != 1 {
			t.Fatalf("DeadLetters = %v, %v; want one", dl, err)
		}
		want := &store.DeadLetter{ID: dl[0].ID, Shard: 0, OriginalJobID: in[0], Task: "t.F", Payload: json.RawMessage(`{"n":0}`),
			Error: "boom again", ErrorType: "E", Attempts: 2, FailedAt: t0.Add(3 * time.Minute)}
		if diff := cmp.Diff(want, dl[0]); diff != "" {
			t.Errorf("dead letter mismatch (-want +got):\n%s", diff)
		}
		// Retrying resets the attempt budget and removes the dead letter.
		if err := b.st.RetryJob(b.ctx, in[0], t0.Add(4*time.Minute)); err != nil {
			t.Fatalf("RetryJob: %v", err)
		}
		got, _ = b.st.Job(b.ctx, in[0])
		if got.Status != store.StatusPending || got.Attempts != 0 || got.RemainingRetries() != 2 {
			t.Errorf("after RetryJob: %s attempts=%d, want pending with 0 attempts", got.Status, got.Attempts)
		}
		if s := stats(t, b); s.DeadLetters != 0 {
			t.Errorf("dead letters after retry = %d, want 0", s.DeadLetters)
		}
		if err := b.st.RetryJob(b.ctx, in[0], t0); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("RetryJob(pending job) error = %v, want ErrJobNotFound", err)
		}
	})

	t.Run("LeaseFencing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		insert(t, b, store.InsertParams{})
		stale := claim(t, b, 1, t0)[0]
		res, err := b.st.RecoverOrphans(b.ctx, t0.Add(time.Second), t0.Add(time.Minute))
		if err != nil || res.Requeued != 1 {
			t.Fatalf("RecoverOrphans = %+v, %v; want 1 requeued", res, err)
		}
		fresh := claim(t, b, 1, t0.Add(time.Minute))[0]
		if fresh.ID != stale.ID || fresh.Lease == stale.Lease {
			t.Fatalf("re-claim got id %d lease %d, want same id with a new lease", fresh.ID, fresh.Lease)
		}
		staleLease := store.Lease{ID: stale.ID, Token: stale.Lease}
		for name, err := range map[string]error{
			"Complete":  b.st.Complete(b.ctx, []store.CompleteParams{{Lease: staleLease, Now: t0}})[0],
			"Fail":      b.st.Fail(b.ctx, []store.FailParams{{Lease: staleLease, Dead: true, Error: "x", ErrorType: "x", Now: t0}})[0],
			"Heartbeat": b.st.Heartbeat(b.ctx, []store.Lease{staleLease}, t0)[0],
			"Release":   b.st.Release(b.ctx, []store.Lease{staleLease})[0],
		} {
			if !errors.Is(err, store.ErrLeaseLost) {
				t.Errorf("stale %s error = %v, want ErrLeaseLost", name, err)
			}
		}
		j, _ := b.st.Job(b.ctx, stale.ID)
		if j.Status != store.StatusProcessing || j.Lease != fresh.Lease {
			t.Errorf("after stale calls job = %s lease %d, want untouched processing with the fresh lease", j.Status, j.Lease)
		}
		if s := stats(t, b); s.TotalProcessed != 0 || s.TotalFailed != 0 || s.DeadLetters != 0 {
			t.Errorf("stale calls changed counters: %+v", s)
		}
		if errs := b.st.Complete(b.ctx, []store.CompleteParams{{Lease: store.Lease{ID: fresh.ID, Token: fresh.Lease}, Now: t0}}); errs[0] != nil {
			t.Errorf("fresh Complete: %v", errs[0])
		}
	})

	t.Run("HeartbeatKeepsJobFromRecovery", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		insert(t, b, store.InsertParams{}, store.InsertParams{})
		jobs := claim(t, b, 2, t0)
		errs := b.st.Heartbeat(b.ctx, []store.Lease{{ID: jobs[0].ID, Token: jobs[0].Lease}}, t0.Add(50*time.Second))
		if errs[0] != nil {
			t.Fatalf("Heartbeat: %v", errs[0])
		}
		res, err := b.st.RecoverOrphans(b.ctx, t0.Add(30*time.Second), t0.Add(60*time.Second))
		if err != nil || res.Requeued != 1 {
			t.Fatalf("RecoverOrphans = %+v, %v; want only the silent job requeued", res, err)
		}
		j, _ := b.st.Job(b.ctx, jobs[1].ID)
		if j.Status != store.StatusPending || j.ErrorType != "OrphanRecovery" {
			t.Errorf("silent job = %s %s, want pending OrphanRecovery", j.Status, j.ErrorType)
		}
	})

	t.Run("RecoveryDeadLettersExhaustedJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		in := insert(t, b, store.InsertParams{MaxAttempts: 1})
		claim(t, b, 1, t0)
		res, err := b.st.RecoverOrphans(b.ctx, t0.Add(time.Minute), t0.Add(time.Minute))
		if err != nil || res != (store.RecoverResult{DeadLettered: 1}) {
			t.Fatalf("RecoverOrphans = %+v, %v; want 1 dead-lettered", res, err)
		}
		j, _ := b.st.Job(b.ctx, in[0])
		if j.Status != store.StatusFailed {
			t.Errorf("exhausted orphan status = %s, want failed", j.Status)
		}
		if s := stats(t, b); s.DeadLetters != 1 || s.TotalFailed != 1 {
			t.Errorf("dead letters=%d failed=%d, want 1 and 1", s.DeadLetters, s.TotalFailed)
		}
	})

	t.Run("ReleaseRefundsAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		in := insert(t, b, store.InsertParams{})
		j := claim(t, b, 1, t0)[0]
		if errs := b.st.Release(b.ctx, []store.Lease{{ID: j.ID, Token: j.Lease}}); errs[0] != nil {
			t.Fatalf("Release: %v", errs[0])
		}
		got, _ := b.st.Job(b.ctx, in[0])
		if got.Status != store.StatusPending || got.Attempts != 0 || got.WorkerID != "" {
			t.Errorf("released job = %s attempts=%d worker=%q, want pending, 0, none", got.Status, got.Attempts, got.WorkerID)
		}
	})

	t.Run("RetryFailedAllAndOneShard", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 2)
		insert(t, b, store.InsertParams{Shard: 0}, store.InsertParams{Shard: 1}, store.InsertParams{Shard: 1})
		for _, j := range claim(t, b, 3, t0) {
			b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Dead: true, Error: "x", ErrorType: "x", Now: t0}})
		}
		n, err := b.st.RetryFailed(b.ctx, 1, t0)
		if err != nil || n != 2 {
			t.Fatalf("RetryFailed(shard 1) = %d, %v; want 2", n, err)
		}
		n, err = b.st.RetryFailed(b.ctx, store.AllShards, t0)
		if err != nil || n != 1 {
			t.Fatalf("RetryFailed(all) = %d, %v; want 1", n, err)
		}
		if s := stats(t, b); counts(s) != [6]int64{3, 0, 0, 0, 0, 0} {
			t.Errorf("stats after retries = %v, want 3 pending and no dead letters", counts(s))
		}
		if _, err := b.st.RetryFailed(b.ctx, 2, t0); !errors.Is(err, store.ErrInvalidShard) {
			t.Errorf("RetryFailed(shard 2 of 2) error = %v, want ErrInvalidShard", err)
		}
	})

	t.Run("RequeueDead", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		in := insert(t, b, store.InsertParams{Task: "t.R"}, store.InsertParams{Task: "t.R"})
		for _, j := range claim(t, b, 2, t0) {
			b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Dead: true, Error: "x", ErrorType: "x", Now: t0}})
		}
		requeue := store.RequeueParams{Now: t0, Defaults: func(task string) (store.Priority, int) {
			if task != "t.R" {
				t.Errorf("Defaults(%q), want t.R", task)
			}
			return store.PriorityHigh, 7
		}}
		dl, _ := b.st.DeadLetters(b.ctx, store.ListParams{Shard: store.AllShards})
		if len(dl) != 2 {
			t.Fatalf("dead letters = %d, want 2", len(dl))
		}
		// The first dead letter's queue row still exists: it is re-queued
		// with its own settings and a fresh budget.
		first := dl[len(dl)-1]
		if first.OriginalJobID != in[0] {
			t.Fatalf("oldest dead letter is job %d, want %d", first.OriginalJobID, in[0])
		}
		id, err := b.st.RequeueDead(b.ctx, first.Shard, first.ID, requeue)
		if err != nil || id != in[0] {
			t.Fatalf("RequeueDead(first) = %d, %v; want job %d", id, err, in[0])
		}
		if j, _ := b.st.Job(b.ctx, id); j.Status != store.StatusPending || j.Attempts != 0 || j.MaxAttempts != 4 {
			t.Errorf("requeued existing job = %+v, want pending, 0 of 4 attempts", j)
		}
		// The second job's row is cleaned up; requeueing re-creates it with
		// its task's defaults.
		if _, err := b.st.Purge(b.ctx, []store.Status{store.StatusFailed}); err != nil {
			t.Fatal(err)
		}
		second := dl[0]
		id, err = b.st.RequeueDead(b.ctx, second.Shard, second.ID, requeue)
		if err != nil || id == in[1] {
			t.Fatalf("RequeueDead(second) = %d, %v; want a new job", id, err)
		}
		j, err := b.st.Job(b.ctx, id)
		if err != nil || j.Status != store.StatusPending || j.Task != "t.R" || string(j.Payload) != string(second.Payload) ||
			j.Attempts != 0 || j.MaxAttempts != 7 || j.Priority != store.PriorityHigh {
			t.Errorf("re-created job = %+v, %v; want pending t.R with the dead letter's payload, the task's 7 attempts and priority", j, err)
		}
		if s := stats(t, b); s.DeadLetters != 0 || s.Pending != 2 {
			t.Errorf("after requeue dead=%d pending=%d, want 0 and 2", s.DeadLetters, s.Pending)
		}
		if _, err := b.st.RequeueDead(b.ctx, 0, 999, requeue); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("RequeueDead(missing) error = %v, want ErrJobNotFound", err)
		}
	})

	t.Run("CleanupByFinishTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		insert(t, b, store.InsertParams{}, store.InsertParams{}, store.InsertParams{})
		jobs := claim(t, b, 3, t0)
		b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: jobs[0].ID, Token: jobs[0].Lease}, Dead: true, Error: "x", ErrorType: "x", Now: t0}})
		b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: jobs[1].ID, Token: jobs[1].Lease}, Dead: true, Error: "x", ErrorType: "x", Now: t0.Add(48 * time.Hour)}})
		res, err := b.st.Cleanup(b.ctx, t0.Add(24*time.Hour))
		if err != nil || res != (store.CleanupResult{Jobs: 1, DeadLetters: 1}) {
			t.Fatalf("Cleanup = %+v, %v; want 1 job and 1 dead letter", res, err)
		}
		if s := stats(t, b); counts(s) != [6]int64{0, 0, 1, 1, 0, 1} {
			t.Errorf("stats after cleanup = %v", counts(s))
		}
	})

	t.Run("PurgeByStatus", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 2)
		insert(t, b, store.InsertParams{Shard: 0}, store.InsertParams{Shard: 1}, store.InsertParams{Shard: 1, RunAt: t0.Add(time.Hour)})
		claim(t, b, 1, t0)
		n, err := b.st.Purge(b.ctx, []store.Status{store.StatusScheduled})
		if err != nil || n != 1 {
			t.Fatalf("Purge(scheduled) = %d, %v; want 1", n, err)
		}
		n, err = b.st.Purge(b.ctx, nil)
		if err != nil || n != 1 {
			t.Fatalf("Purge(all but processing) = %d, %v; want 1", n, err)
		}
		if s := stats(t, b); counts(s) != [6]int64{0, 0, 1, 0, 0, 0} {
			t.Errorf("stats after purge = %v, want the processing job kept", counts(s))
		}
	})

	t.Run("ListingsAndTaskCounts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 3)
		var ps []store.InsertParams
		for i := range 9 {
			task := "t.A"
			if i%3 == 0 {
				task = "t.B"
			}
			ps = append(ps, store.InsertParams{Shard: i % 3, Task: task, Now: t0.Add(time.Duration(i) * time.Second)})
		}
		in := insert(t, b, ps...)
		got, err := b.st.Jobs(b.ctx, store.ListParams{Shard: store.AllShards, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]store.JobID{in[8], in[7], in[6], in[5]}, ids(got)); diff != "" {
			t.Errorf("Jobs newest first mismatch (-want +got):\n%s", diff)
		}
		got, _ = b.st.Jobs(b.ctx, store.ListParams{Shard: store.AllShards, Task: "t.B"})
		if diff := cmp.Diff([]store.JobID{in[6], in[3], in[0]}, ids(got)); diff != "" {
			t.Errorf("Jobs(task t.B) mismatch (-want +got):\n%s", diff)
		}
		got, _ = b.st.Jobs(b.ctx, store.ListParams{Shard: 1})
		if len(got) != 3 {
			t.Errorf("Jobs(shard 1) = %d jobs, want 3", len(got))
		}
		tc, err := b.st.TaskCounts(b.ctx, "t.A")
		if err != nil || tc[store.StatusPending] != 6 {
			t.Errorf("TaskCounts(t.A) = %v, %v; want 6 pending", tc, err)
		}
		has, err := b.st.HasWork(b.ctx)
		if err != nil || !has {
			t.Errorf("HasWork = %v, %v; want true", has, err)
		}
	})

	t.Run("DataVersionSeesCommits", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 2)
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

	t.Run("ConcurrentClaimsNeverDuplicate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 4)
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

	t.Run("ConcurrentSingleInsertsGroupCommit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 2)
		var mu sync.Mutex
		var all []store.JobID
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 50 {
					id, err := b.st.Insert(b.ctx, []store.InsertParams{{Shard: (g + i) % 2, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}})
					if err != nil {
						t.Errorf("Insert: %v", err)
						return
					}
					mu.Lock()
					all = append(all, id...)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(all)
		if len(slices.Compact(all)) != 800 {
			t.Errorf("distinct IDs = %d, want 800", len(all))
		}
		if s := stats(t, b); s.Pending != 800 {
			t.Errorf("pending = %d, want 800", s.Pending)
		}
	})

	t.Run("ConcurrentSingleCompletesGroupCommit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 1)
		const n = 64
		in := make([]store.InsertParams, n)
		insert(t, b, in...)
		jobs := claim(t, b, n, t0)
		if len(jobs) != n {
			t.Fatalf("Claim = %d jobs, want %d", len(jobs), n)
		}
		// One acknowledgement per call from many goroutines, so that they
		// share group transactions; every fourth carries a stale lease and
		// must fail alone without undoing the others.
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, j := range jobs {
			wg.Go(func() {
				l := store.Lease{ID: j.ID, Token: j.Lease}
				if i%4 == 0 {
					l.Token++
				}
				errs[i] = b.st.Complete(b.ctx, []store.CompleteParams{{Lease: l, Now: t0}})[0]
			})
		}
		wg.Wait()
		for i, err := range errs {
			var want error
			if i%4 == 0 {
				want = store.ErrLeaseLost
			}
			if !errors.Is(err, want) || (want == nil && err != nil) {
				t.Errorf("Complete(job %d) = %v, want %v", jobs[i].ID, err, want)
			}
		}
		if s := stats(t, b); s.Processing != n/4 || s.TotalProcessed != n-n/4 {
			t.Errorf("after completes: %d processing, %d processed; want %d, %d", s.Processing, s.TotalProcessed, n/4, n-n/4)
		}
	})

	t.Run("Metadata", func(t *testing.T) {
		t.Parallel()
		testMetadata(t, setup(t, 2).st)
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		testCancel(t, setup(t, 2).st)
	})
	t.Run("Snooze", func(t *testing.T) {
		t.Parallel()
		testSnooze(t, setup(t, 1).st)
	})
	t.Run("UniqueInsert", func(t *testing.T) {
		t.Parallel()
		testUniqueInsert(t, setup(t, 2).st)
	})
	t.Run("UniqueRelease", func(t *testing.T) {
		t.Parallel()
		testUniqueRelease(t, setup(t, 1).st)
	})
	t.Run("UniqueRetry", func(t *testing.T) {
		t.Parallel()
		testUniqueRetry(t, setup(t, 1).st)
	})
	t.Run("UniqueConcurrent", func(t *testing.T) {
		t.Parallel()
		testUniqueConcurrent(t, setup(t, 2).st)
	})
	t.Run("Retention", func(t *testing.T) {
		t.Parallel()
		testRetention(t, setup(t, 2).st)
	})
	t.Run("Options", func(t *testing.T) {
		t.Parallel()
		testOptions(t, setup(t, 2).st)
	})
	t.Run("JobCounts", func(t *testing.T) {
		t.Parallel()
		testJobCounts(t, setup(t, 2).st)
	})

	t.Run("WorkerFence", func(t *testing.T) {
		t.Parallel()
		testWorkerFence(t, setup(t, 1).st)
	})

	t.Run("ClaimUnnamedTask", func(t *testing.T) {
		t.Parallel()
		testClaimUnnamedTask(t, setup(t, 1).st)
	})

	t.Run("ClaimedFields", func(t *testing.T) {
		t.Parallel()
		testClaimedFields(t, setup(t, 1).st)
	})

	t.Run("BatchAckFences", func(t *testing.T) {
		t.Parallel()
		testBatchAckFences(t, setup(t, 2).st)
	})

	t.Run("ConcurrentSingleFails", func(t *testing.T) {
		t.Parallel()
		testConcurrentSingleFails(t, setup(t, 1).st)
	})

	t.Run("CompleteClaim", func(t *testing.T) {
		t.Parallel()
		testCompleteClaim(t, setup(t, 1).st)
	})

	t.Run("BatchAllOrNothing", func(t *testing.T) {
		t.Parallel()
		testBatchAllOrNothing(t, setup(t, 3).st)
	})

	t.Run("WorkerRegistry", func(t *testing.T) {
		t.Parallel()
		testWorkerRegistry(t, setup(t, 2).st)
	})

	t.Run("Queues", func(t *testing.T) {
		t.Parallel()
		testQueues(t, func(shards int) store.Store { return setup(t, shards).st })
	})

	t.Run("UseAfterClose", func(t *testing.T) {
		t.Parallel()
		st := open(t, 1)
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ctx := t.Context()
		if _, err := st.Insert(ctx, []store.InsertParams{{Payload: json.RawMessage(`{}`)}}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Insert after Close error = %v, want ErrClosed", err)
		}
		if _, err := st.Claim(ctx, store.ClaimParams{Max: 1}); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Claim after Close error = %v, want ErrClosed", err)
		}
		if errs := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: store.NewJobID(0, 1)}}}); !errors.Is(errs[0], store.ErrClosed) {
			t.Errorf("Complete after Close error = %v, want ErrClosed", errs[0])
		}
		if _, err := st.Stats(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Stats after Close error = %v, want ErrClosed", err)
		}
	})
}

var cmpErrors = cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) || errors.Is(b, a) })
