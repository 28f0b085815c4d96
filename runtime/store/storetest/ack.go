package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// testAckArea runs the Ack area: acknowledgements (Complete, Fail) are fenced by lease and worker, batched and group-committed.
func testAckArea(t *testing.T, s *suite) {
	t.Run("CompleteDeletesOrKeepsResult", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
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

	t.Run("LeaseFencing", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
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

	t.Run("WorkerFence", func(t *testing.T) {
		t.Parallel()
		testWorkerFence(t, s.setup(t, 1).st)
	})

	t.Run("BatchAckFences", func(t *testing.T) {
		t.Parallel()
		testBatchAckFences(t, s.setup(t, 2).st)
	})

	t.Run("CompleteClaim", func(t *testing.T) {
		t.Parallel()
		testCompleteClaim(t, s.setup(t, 1).st)
	})

	t.Run("ConcurrentSingleCompletesGroupCommit", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
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

	t.Run("ConcurrentSingleFails", func(t *testing.T) {
		t.Parallel()
		testConcurrentSingleFails(t, s.setup(t, 1).st)
	})
}

// testWorkerFence checks that a lease naming a worker holds only while that
// worker owns the job, in Complete, Fail, Heartbeat and Release.
func testWorkerFence(t *testing.T, st store.Store) {
	ctx := t.Context()
	if _, err := st.Insert(ctx, []store.InsertParams{{Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: t0}}); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 1, Now: t0})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %d jobs, %v; want 1", len(jobs), err)
	}
	j := jobs[0]
	other := store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w2"}
	for name, err := range map[string]error{
		"Complete":  st.Complete(ctx, []store.CompleteParams{{Lease: other, Now: t0}})[0],
		"Fail":      st.Fail(ctx, []store.FailParams{{Lease: other, Dead: true, Error: "x", ErrorType: "x", Now: t0}})[0],
		"Heartbeat": st.Heartbeat(ctx, []store.Lease{other}, t0)[0],
		"Release":   st.Release(ctx, []store.Lease{other})[0],
	} {
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s with the right token but worker w2: error = %v, want ErrLeaseLost", name, err)
		}
	}
	if got, err := st.Job(ctx, j.ID); err != nil || got.Status != store.StatusProcessing || got.WorkerID != "w1" {
		t.Fatalf("after the other worker's calls job = %+v, %v; want untouched, processing by w1", got, err)
	}
	own := store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"}
	if err := st.Heartbeat(ctx, []store.Lease{own}, t0)[0]; err != nil {
		t.Errorf("Heartbeat by the owner: %v", err)
	}
	if err := st.Release(ctx, []store.Lease{own})[0]; err != nil {
		t.Errorf("Release by the owner: %v", err)
	}
	jobs, err = st.Claim(ctx, store.ClaimParams{WorkerID: "w3", Max: 1, Now: t0})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("re-Claim = %d jobs, %v; want 1", len(jobs), err)
	}
	if err := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: jobs[0].Lease, WorkerID: "w3"}, Now: t0}})[0]; err != nil {
		t.Errorf("Complete by the owner: %v", err)
	}
}

// insertClaimed inserts n no-op jobs and claims them all as worker w1.
func insertClaimed(t *testing.T, st store.Store, n int) []*store.Job {
	t.Helper()
	params := make([]store.InsertParams, n)
	for i := range params {
		params[i] = store.InsertParams{Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: t0}
	}
	if _, err := st.Insert(t.Context(), params); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	jobs, err := st.Claim(t.Context(), store.ClaimParams{WorkerID: "w1", Max: n, Now: t0})
	if err != nil || len(jobs) != n {
		t.Fatalf("Claim = %d jobs, %v; want %d", len(jobs), err, n)
	}
	return jobs
}

// testBatchAckFences checks the per-item results of batched
// acknowledgements: in one call, each item holds or is ErrLeaseLost on its
// own (a stale token, another worker, an item listed twice, a job already
// acknowledged), and the items that hold take effect while the others
// change nothing.
func testBatchAckFences(t *testing.T, st store.Store) {
	ctx := t.Context()
	const n = 12
	jobs := insertClaimed(t, st, n)
	own := func(j *store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"} }
	stale := func(j *store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Lease + 1, WorkerID: "w1"} }
	other := func(j *store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w2"} }
	anyWorker := func(j *store.Job) store.Lease { return store.Lease{ID: j.ID, Token: j.Lease} }
	lost := store.ErrLeaseLost

	// Heartbeat: jobs 0–3.
	hb := []store.Lease{own(jobs[0]), stale(jobs[1]), other(jobs[2]), anyWorker(jobs[3]), own(jobs[0])}
	if diff := cmp.Diff([]error{nil, lost, lost, nil, nil}, st.Heartbeat(ctx, hb, t0.Add(time.Second)), cmpErrors); diff != "" {
		t.Errorf("Heartbeat errors (-want +got):\n%s", diff)
	}

	// Complete: jobs 0–5, job 0 twice (the second is lost), job 4 with a
	// result.
	acks := []store.CompleteParams{
		{Lease: own(jobs[0]), Now: t0},
		{Lease: stale(jobs[1]), Now: t0},
		{Lease: other(jobs[2]), Now: t0},
		{Lease: anyWorker(jobs[3]), Now: t0},
		{Lease: own(jobs[4]), Result: json.RawMessage(`{"r":1}`), Now: t0},
		{Lease: own(jobs[0]), Now: t0},
		{Lease: own(jobs[5]), Now: t0},
	}
	if diff := cmp.Diff([]error{nil, lost, lost, nil, nil, lost, nil}, st.Complete(ctx, acks), cmpErrors); diff != "" {
		t.Errorf("Complete errors (-want +got):\n%s", diff)
	}
	for _, i := range []int{0, 3, 5} {
		if _, err := st.Job(ctx, jobs[i].ID); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("completed job %d: Job error = %v, want ErrJobNotFound (deleted)", i, err)
		}
	}
	if j, err := st.Job(ctx, jobs[4].ID); err != nil || j.Status != store.StatusCompleted || string(j.Result) != `{"r":1}` {
		t.Errorf("job completed with a result = %+v, %v", j, err)
	}
	for _, i := range []int{1, 2} {
		if j, err := st.Job(ctx, jobs[i].ID); err != nil || j.Status != store.StatusProcessing || j.WorkerID != "w1" {
			t.Errorf("job %d after a lost ack = %+v, %v; want processing by w1", i, j, err)
		}
	}
	// Acknowledging again what was acknowledged is lost too.
	if diff := cmp.Diff([]error{lost, lost}, st.Complete(ctx, []store.CompleteParams{{Lease: own(jobs[0]), Now: t0},
		{Lease: own(jobs[4]), Now: t0}}), cmpErrors); diff != "" {
		t.Errorf("second Complete errors (-want +got):\n%s", diff)
	}

	// Fail: jobs 1, 2 and 6–11 (retry, dead, cancelled, snooze, each with
	// a fence that holds or not).
	fails := []store.FailParams{
		{Lease: own(jobs[1]), Error: "e1", ErrorType: "E", RetryAt: t0.Add(time.Minute), Now: t0},
		{Lease: stale(jobs[2]), Error: "e2", ErrorType: "E", Dead: true, Now: t0},
		{Lease: own(jobs[6]), Error: "e6", ErrorType: "E", Dead: true, Now: t0},
		{Lease: other(jobs[7]), Error: "e7", ErrorType: "E", Dead: true, Now: t0},
		{Lease: own(jobs[8]), Error: "e8", ErrorType: "E", Cancelled: true, Now: t0},
		{Lease: own(jobs[9]), Snooze: true, RetryAt: t0.Add(time.Minute), Now: t0},
		{Lease: own(jobs[6]), Error: "again", ErrorType: "E", Dead: true, Now: t0},
		{Lease: anyWorker(jobs[10]), Error: "e10", ErrorType: "E", RetryAt: t0, Now: t0},
	}
	if diff := cmp.Diff([]error{nil, lost, nil, lost, nil, nil, lost, nil}, st.Fail(ctx, fails), cmpErrors); diff != "" {
		t.Errorf("Fail errors (-want +got):\n%s", diff)
	}
	want := map[int]store.Status{1: store.StatusScheduled, 2: store.StatusProcessing, 6: store.StatusFailed,
		7: store.StatusProcessing, 8: store.StatusCancelled, 9: store.StatusScheduled, 10: store.StatusPending, 11: store.StatusProcessing}
	for i, w := range want {
		j, err := st.Job(ctx, jobs[i].ID)
		if err != nil || j.Status != w {
			t.Errorf("job %d after Fail = %+v, %v; want %s", i, j, err, w)
		}
	}
	dls, err := st.DeadLetters(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil || len(dls) != 1 || dls[0].Error != "e6" {
		t.Errorf("dead letters = %+v, %v; want one, for job 6 with error e6", dls, err)
	}
	ss, err := st.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	sum := queuemaxtype.SumShards(ss)
	if processed, failed := sum.TotalProcessed, sum.TotalFailed; processed != 4 || failed != 1 {
		t.Errorf("counters: %d processed, %d failed; want 4 and 1", processed, failed)
	}
}

// completeClaimer is a store's own extension that the engine does not use
// (pgstore has it): Complete then Claim in one transaction.
type completeClaimer interface {
	CompleteClaim(ctx context.Context, acks []store.CompleteParams, p store.ClaimParams) ([]error, []*store.Job, error)
}

// testCompleteClaim checks a completeClaimer: the acknowledgements'
// per-item results are Complete's, and the claim that follows takes the
// next jobs in priority then FIFO order, never one just acknowledged.
func testCompleteClaim(t *testing.T, st store.Store) {
	cc, ok := st.(completeClaimer)
	if !ok {
		t.Skip("the store has no CompleteClaim (an extension, not part of store.Store)")
	}
	ctx := t.Context()
	prios := []store.Priority{store.PriorityLow, store.PriorityHigh, store.PriorityMedium, store.PriorityHigh, store.PriorityLow, store.PriorityMedium}
	params := make([]store.InsertParams, len(prios))
	for i, p := range prios {
		params[i] = store.InsertParams{Payload: json.RawMessage(`{}`), Priority: p, MaxAttempts: 3, Now: t0}
	}
	ids, err := st.Insert(ctx, params)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 2, Now: t0})
	if err != nil || len(jobs) != 2 || jobs[0].ID != ids[1] || jobs[1].ID != ids[3] {
		t.Fatalf("Claim = %v, %v; want the two high-priority jobs", jobs, err)
	}
	acks := []store.CompleteParams{
		{Lease: store.Lease{ID: jobs[0].ID, Token: jobs[0].Lease, WorkerID: "w1"}, Now: t0},
		{Lease: store.Lease{ID: jobs[1].ID, Token: jobs[1].Lease + 1, WorkerID: "w1"}, Now: t0},
		{Lease: store.Lease{ID: jobs[0].ID, Token: jobs[0].Lease, WorkerID: "w1"}, Now: t0},
	}
	errs, next, err := cc.CompleteClaim(ctx, acks, store.ClaimParams{WorkerID: "w1", Max: 3, Now: t0})
	if err != nil {
		t.Fatalf("CompleteClaim: %v", err)
	}
	if diff := cmp.Diff([]error{nil, store.ErrLeaseLost, store.ErrLeaseLost}, errs, cmpErrors); diff != "" {
		t.Errorf("CompleteClaim errors (-want +got):\n%s", diff)
	}
	var got []store.JobID
	for _, j := range next {
		got = append(got, j.ID)
		if j.Status != store.StatusProcessing || j.WorkerID != "w1" || j.Lease == 0 {
			t.Errorf("claimed job %+v", j)
		}
	}
	if diff := cmp.Diff([]store.JobID{ids[2], ids[5], ids[0]}, got); diff != "" {
		t.Errorf("CompleteClaim claimed (-want +got):\n%s", diff)
	}
	if _, err := st.Job(ctx, ids[1]); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("acknowledged job: Job error = %v, want ErrJobNotFound", err)
	}
	if j, err := st.Job(ctx, ids[3]); err != nil || j.Status != store.StatusProcessing {
		t.Errorf("job with the stale ack = %+v, %v; want still processing", j, err)
	}
}

// testConcurrentSingleFails checks single-item Fail calls from many
// goroutines (which a store may group into shared statements): each gets
// its own result, a stale lease fails alone, dead ones are dead-lettered
// and counted once each.
func testConcurrentSingleFails(t *testing.T, st store.Store) {
	ctx := t.Context()
	const n = 48
	jobs := insertClaimed(t, st, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			f := store.FailParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"}, Error: "e", ErrorType: "E",
				RetryAt: t0.Add(time.Minute), Now: t0}
			switch i % 4 {
			case 0:
				f.Token++
			case 1:
				f.Dead = true
			}
			errs[i] = st.Fail(ctx, []store.FailParams{f})[0]
		})
	}
	wg.Wait()
	for i, err := range errs {
		var want error
		if i%4 == 0 {
			want = store.ErrLeaseLost
		}
		if !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("Fail(job %d) = %v, want %v", jobs[i].ID, err, want)
		}
	}
	ss, err := st.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	var sum store.ShardStats
	for _, s := range ss {
		sum.Processing += s.Processing
		sum.Scheduled += s.Scheduled
		sum.Failed += s.Failed
		sum.TotalFailed += s.TotalFailed
	}
	if sum.Processing != n/4 || sum.Scheduled != n/2 || sum.Failed != n/4 || sum.TotalFailed != n/4 {
		t.Errorf("after fails: %+v; want %d processing, %d scheduled, %d failed and counted", sum, n/4, n/2, n/4)
	}
	if dls, err := st.DeadLetters(ctx, store.ListParams{Shard: store.AllShards, Limit: 1000}); err != nil || len(dls) != n/4 {
		t.Errorf("dead letters = %d, %v; want %d", len(dls), err, n/4)
	}
}
