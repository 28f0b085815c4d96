package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// testRetentionArea runs the Retention area.
func testRetentionArea(t *testing.T, s *suite) {
	t.Run("KeepAndPrune", func(t *testing.T) {
		t.Parallel()
		testRetention(t, s.setup(t, 2).st)
	})

	t.Run("CleanupByFinishTime", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
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
		b := s.setup(t, 2)
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
}

// testRetention checks CompleteParams.Keep and Prune: a kept job without a
// result stays listed as completed with its finish time (and counted), a
// job completed without Keep is deleted, and Prune deletes completed jobs
// by their own cutoff, apart from failed and cancelled jobs and dead
// letters, which follow the other one.
func testRetention(t *testing.T, st store.Store) {
	ctx := t.Context()
	var ps []store.InsertParams
	for _, task := range []string{"t.Keep", "t.Drop", "t.Result", "t.Dead", "t.Cancel"} {
		ps = append(ps, store.InsertParams{Task: task, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0})
	}
	ids, err := st.Insert(ctx, ps)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: t0})
	if err != nil || len(jobs) != 5 {
		t.Fatalf("Claim = %d jobs, %v; want 5", len(jobs), err)
	}
	lease := map[store.JobID]store.Lease{}
	for _, j := range jobs {
		lease[j.ID] = store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"}
	}
	done := t0.Add(time.Minute)
	errs := st.Complete(ctx, []store.CompleteParams{
		{Lease: lease[ids[0]], Keep: true, Now: done},
		{Lease: lease[ids[1]], Now: done},
		{Lease: lease[ids[2]], Result: json.RawMessage(`{"ok":true}`), Keep: true, Now: done},
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Complete[%d]: %v", i, err)
		}
	}
	errs = st.Fail(ctx, []store.FailParams{
		{Lease: lease[ids[3]], Error: "boom", ErrorType: "E", Dead: true, Now: done},
		{Lease: lease[ids[4]], Error: "stop", ErrorType: "E", Cancelled: true, Now: done},
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Fail[%d]: %v", i, err)
		}
	}

	kept, err := st.Job(ctx, ids[0])
	if err != nil {
		t.Fatalf("Job(kept): %v", err)
	}
	if kept.Status != store.StatusCompleted || !kept.CompletedAt.Equal(done) || kept.Result != nil || kept.WorkerID != "" || kept.Lease != 0 {
		t.Errorf("kept job = status %s, completed %v, result %s, worker %q, lease %d; want completed at %v, no result, worker or lease",
			kept.Status, kept.CompletedAt, kept.Result, kept.WorkerID, kept.Lease, done)
	}
	if _, err := st.Job(ctx, ids[1]); err == nil {
		t.Errorf("a job completed without Keep is still stored")
	}
	list, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards, Status: store.StatusCompleted})
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	if got := idsOf(list); !sameSet(got, []store.JobID{ids[0], ids[2]}) {
		t.Errorf("completed jobs listed = %v, want %v", got, []store.JobID{ids[0], ids[2]})
	}
	ss, err := st.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	sum := queuemaxtype.SumShards(ss)
	if completed, processed := sum.Completed, sum.TotalProcessed; completed != 2 || processed != 3 {
		t.Errorf("Stats: %d completed, %d processed; want 2, 3", completed, processed)
	}

	// KeepResultsAfter spares the job with a result, finished after it.
	res, err := st.Prune(ctx, store.PruneParams{CompletedBefore: done.Add(time.Second), KeepResultsAfter: done.Add(-time.Second)})
	if err != nil {
		t.Fatalf("Prune(completed, keeping results): %v", err)
	}
	if _, err := st.Job(ctx, ids[2]); res.Jobs != 1 || err != nil {
		t.Errorf("Prune(completed, keeping results) = %+v, job with result: %v; want 1 job deleted, the result kept", res, err)
	}
	// The completed cutoff alone leaves failed, cancelled and dead letters.
	res, err = st.Prune(ctx, store.PruneParams{CompletedBefore: done.Add(time.Second)})
	if err != nil {
		t.Fatalf("Prune(completed): %v", err)
	}
	if res.Jobs != 1 || res.DeadLetters != 0 {
		t.Errorf("Prune(completed) = %+v, want 1 job (the result), 0 dead letters", res)
	}
	// A cutoff at or before the finish time deletes nothing.
	res, err = st.Prune(ctx, store.PruneParams{FinishedBefore: done})
	if err != nil || res != (store.CleanupResult{}) {
		t.Errorf("Prune(finished at cutoff) = %+v, %v; want nothing", res, err)
	}
	res, err = st.Prune(ctx, store.PruneParams{FinishedBefore: done.Add(time.Second)})
	if err != nil {
		t.Fatalf("Prune(finished): %v", err)
	}
	if res.Jobs != 2 || res.DeadLetters != 1 {
		t.Errorf("Prune(finished) = %+v, want 2 jobs, 1 dead letter", res)
	}
	if list, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards}); err != nil || len(list) != 0 {
		t.Errorf("after both prunes: %d jobs listed, %v; want none", len(list), err)
	}
}

func idsOf(jobs []*store.Job) []store.JobID {
	out := make([]store.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func sameSet(a, b []store.JobID) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[store.JobID]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		if m[x] == 0 {
			return false
		}
		m[x]--
	}
	return true
}
