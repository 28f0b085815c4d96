package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testCancelSnoozeArea runs the CancelSnooze area.
func testCancelSnoozeArea(t *testing.T, s *suite) {
	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		testCancel(t, s.setup(t, 2).st)
	})

	t.Run("Snooze", func(t *testing.T) {
		t.Parallel()
		testSnooze(t, s.setup(t, 1).st)
	})
}

// testCancel checks Cancel on every status: waiting jobs become cancelled
// at once and are never claimed; a running job gets a request that
// Heartbeat reports, and a retry, release or orphan recovery of it ends it
// cancelled; finished and unknown jobs are errors; FailParams.Cancelled ends
// a job cancelled without a dead letter.
func testCancel(t *testing.T, st store.Store) {
	ctx := t.Context()
	ins := func(n int, runAt time.Time) []store.JobID {
		t.Helper()
		ps := make([]store.InsertParams, n)
		for i := range ps {
			ps[i] = store.InsertParams{Shard: i % st.Shards(), Task: "t.C", Payload: json.RawMessage(`{}`), MaxAttempts: 3, RunAt: runAt, Now: t0}
		}
		ids, err := st.Insert(ctx, ps)
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		return ids
	}
	status := func(id store.JobID) *store.Job {
		t.Helper()
		j, err := st.Job(ctx, id)
		if err != nil {
			t.Fatalf("Job(%d): %v", id, err)
		}
		return j
	}
	claimAll := func(now time.Time) map[store.JobID]*store.Job {
		t.Helper()
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 100, Now: now})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		m := map[store.JobID]*store.Job{}
		for _, j := range jobs {
			m[j.ID] = j
		}
		return m
	}
	lease := func(j *store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Lease} }

	// Waiting jobs: cancelled at once, never claimed.
	pending := ins(1, time.Time{})[0]
	scheduled := ins(1, t0.Add(time.Hour))[0]
	for _, id := range []store.JobID{pending, scheduled} {
		got, err := st.Cancel(ctx, id, t0.Add(time.Second))
		if err != nil || got != store.StatusCancelled {
			t.Fatalf("Cancel(waiting %d) = %q, %v; want cancelled", id, got, err)
		}
		j := status(id)
		if !j.IsCancelled() || !j.CompletedAt.Equal(t0.Add(time.Second)) {
			t.Errorf("job %d after Cancel: status %s, completed_at %v; want cancelled at t0+1s", id, j.Status, j.CompletedAt)
		}
		if _, err := st.Cancel(ctx, id, t0); !errors.Is(err, store.ErrJobFinished) {
			t.Errorf("second Cancel(%d) = %v; want ErrJobFinished", id, err)
		}
	}
	if got := claimAll(t0.Add(2 * time.Hour)); len(got) != 0 {
		t.Fatalf("claimed %d cancelled jobs", len(got))
	}
	if _, err := st.Cancel(ctx, store.NewJobID(0, 1<<40), t0); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("Cancel(unknown) = %v; want ErrJobNotFound", err)
	}

	// Running jobs: a request, reported by Heartbeat; then each way out.
	ids := ins(4, time.Time{})
	running := claimAll(t0)
	if len(running) != 4 {
		t.Fatalf("claimed %d, want 4", len(running))
	}
	for _, id := range ids[:3] {
		got, err := st.Cancel(ctx, id, t0)
		if err != nil || got != store.StatusProcessing {
			t.Fatalf("Cancel(running %d) = %q, %v; want processing", id, got, err)
		}
		if j := status(id); !j.IsProcessing() || !j.CancelRequested {
			t.Errorf("job %d: status %s, cancel requested %v; want processing with a request", id, j.Status, j.CancelRequested)
		}
	}
	ls := []store.Lease{lease(running[ids[0]]), lease(running[ids[3]]), {ID: ids[1], Token: running[ids[1]].Lease + 1}}
	errs := st.Heartbeat(ctx, ls, t0.Add(time.Second))
	if !errors.Is(errs[0], store.ErrCancelRequested) || errs[1] != nil || !errors.Is(errs[2], store.ErrLeaseLost) {
		t.Fatalf("Heartbeat = %v; want [ErrCancelRequested nil ErrLeaseLost]", errs)
	}
	// A store may add the time the call took to its Now.
	if j := status(ids[0]); j.Heartbeat.Before(t0.Add(time.Second)) || j.Heartbeat.After(t0.Add(time.Minute)) {
		t.Errorf("heartbeat of a job asked to cancel = %v; want renewed to t0+1s", j.Heartbeat)
	}
	// A retryable failure of a job asked to cancel ends it cancelled.
	if err := st.Fail(ctx, []store.FailParams{{Lease: lease(running[ids[0]]), Error: "context canceled", ErrorType: "x",
		RetryAt: t0.Add(time.Minute), Now: t0.Add(2 * time.Second)}})[0]; err != nil {
		t.Fatalf("Fail: %v", err)
	}
	// A release of one ends it cancelled too.
	if err := st.Release(ctx, []store.Lease{lease(running[ids[1]])})[0]; err != nil {
		t.Fatalf("Release: %v", err)
	}
	// The handler ends one itself with Cancelled.
	if err := st.Fail(ctx, []store.FailParams{{Lease: lease(running[ids[3]]), Error: "stop", ErrorType: "CancelError",
		Dead: true, Cancelled: true, Now: t0.Add(2 * time.Second)}})[0]; err != nil {
		t.Fatalf("Fail(Cancelled): %v", err)
	}
	// Orphan recovery of the last one ends it cancelled.
	res, err := st.RecoverOrphans(ctx, t0.Add(time.Hour), t0.Add(time.Hour))
	if err != nil || res.Requeued != 0 || res.DeadLettered != 0 {
		t.Fatalf("RecoverOrphans = %+v, %v; want nothing requeued or dead-lettered", res, err)
	}
	for _, id := range ids {
		if j := status(id); !j.IsCancelled() || j.CompletedAt.IsZero() || j.Lease != 0 {
			t.Errorf("job %d: status %s, completed_at %v, lease %d; want cancelled, finished, no lease", id, j.Status, j.CompletedAt, j.Lease)
		}
	}
	if j := status(ids[3]); j.LastError != "stop" || j.ErrorType != "CancelError" {
		t.Errorf("self-cancelled job error = %q (%s); want stop (CancelError)", j.LastError, j.ErrorType)
	}
	dl, err := st.DeadLetters(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil || len(dl) != 0 {
		t.Errorf("dead letters = %d, %v; want none for cancelled jobs", len(dl), err)
	}
	if got := claimAll(t0.Add(2 * time.Hour)); len(got) != 0 {
		t.Fatalf("claimed %d cancelled jobs", len(got))
	}
	list, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards, Status: store.StatusCancelled})
	if err != nil || len(list) != 6 {
		t.Errorf("Jobs(cancelled) = %d, %v; want 6", len(list), err)
	}
	// A completed job cannot be cancelled; cleanup removes cancelled ones.
	done := ins(1, time.Time{})[0]
	j := claimAll(t0)[done]
	if err := st.Complete(ctx, []store.CompleteParams{{Lease: lease(j), Result: json.RawMessage(`1`), Now: t0}})[0]; err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := st.Cancel(ctx, done, t0); !errors.Is(err, store.ErrJobFinished) {
		t.Errorf("Cancel(completed) = %v; want ErrJobFinished", err)
	}
	cr, err := st.Cleanup(ctx, t0.Add(3*time.Hour))
	if err != nil || cr.Jobs != 7 {
		t.Errorf("Cleanup = %+v, %v; want the 6 cancelled and 1 completed jobs deleted", cr, err)
	}
	// A new claim of a re-queued job starts without a request.
	again := ins(1, time.Time{})[0]
	j = claimAll(t0)[again]
	if _, err := st.Cancel(ctx, again, t0); err != nil {
		t.Fatal(err)
	}
	if err := st.Fail(ctx, []store.FailParams{{Lease: lease(j), Error: "boom", ErrorType: "x", Dead: true, Now: t0}})[0]; err != nil {
		t.Fatal(err)
	}
	if err := st.RetryJob(ctx, again, t0); err != nil {
		t.Fatalf("RetryJob: %v", err)
	}
	j = claimAll(t0)[again]
	if j == nil {
		t.Fatal("retried job not claimed")
	}
	if err := st.Heartbeat(ctx, []store.Lease{lease(j)}, t0)[0]; err != nil {
		t.Errorf("Heartbeat of a fresh claim = %v; want nil", err)
	}
}

// testSnooze checks FailParams.Snooze: the job waits until RetryAt without
// spending its attempt, its snooze count grows (Job, Jobs and Claim show
// it), its last error is kept, and a snooze of a job asked to cancel ends it
// cancelled.
func testSnooze(t *testing.T, st store.Store) {
	ctx := t.Context()
	ids, err := st.Insert(ctx, []store.InsertParams{{Task: "t.S", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	id := ids[0]
	claim := func(now time.Time) *store.Job {
		t.Helper()
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: now})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		for _, j := range jobs {
			if j.ID == id {
				return j
			}
		}
		return nil
	}
	for n := 1; n <= 3; n++ {
		now := t0.Add(time.Duration(n-1) * time.Minute)
		j := claim(now)
		if j == nil {
			t.Fatalf("snooze %d: job not claimed at %v", n, now)
		}
		if j.Attempts != 1 || j.Snoozes != n-1 {
			t.Fatalf("claim %d: attempts %d, snoozes %d; want 1, %d", n, j.Attempts, j.Snoozes, n-1)
		}
		if err := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Error: "snoozed", ErrorType: "SnoozeError",
			Snooze: true, RetryAt: now.Add(time.Minute), Now: now}})[0]; err != nil {
			t.Fatalf("Fail(Snooze): %v", err)
		}
		got, err := st.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.StatusScheduled || got.Attempts != 0 || got.Snoozes != n || !got.NextRetryAt.Equal(now.Add(time.Minute)) || got.LastError != "" {
			t.Fatalf("after snooze %d: %s attempts %d snoozes %d next %v error %q; want scheduled, 0, %d, %v, no error",
				n, got.Status, got.Attempts, got.Snoozes, got.NextRetryAt, got.LastError, n, now.Add(time.Minute))
		}
		if j := claim(now.Add(time.Minute - time.Millisecond)); j != nil {
			t.Fatalf("snoozed job claimed before its time")
		}
	}
	list, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards, Task: "t.S"})
	if err != nil || len(list) != 1 || list[0].Snoozes != 3 {
		t.Fatalf("Jobs = %v, %v; want the job with 3 snoozes", list, err)
	}
	// A snooze of a job asked to cancel ends it cancelled.
	j := claim(t0.Add(3 * time.Minute))
	if _, err := st.Cancel(ctx, id, t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Snooze: true,
		RetryAt: t0.Add(4 * time.Minute), Now: t0.Add(3 * time.Minute)}})[0]; err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Job(ctx, id); got == nil || got.Status != store.StatusCancelled {
		t.Errorf("snoozed after a cancel request: %v; want cancelled", got)
	}
}
