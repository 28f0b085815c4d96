package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/cputime"
	"github.com/queuemax/queuemax/runtime/store"
)

// Bench runs the hot-path benchmarks shared by every store. Each counts
// one b.N per job, so ns/op and allocs/op read as ns/job and allocs/job,
// and reports the process CPU per job as cpu-ns/job (on a shared machine
// it is less disturbed than wall time). A store's bench_test.go binds it:
//
//	func BenchmarkClaimComplete(b *testing.B) { bench.ClaimComplete(b) }
type Bench struct {
	// Open returns an empty store for one benchmark, closed by b.Cleanup.
	Open func(b *testing.B) store.Store
	// Order is every claim's ClaimParams.Order (nil: the store's own).
	Order []int
	// Server, when set, is called after a drain's setup; the func it
	// returns is called at the drain's end to report the server side's
	// CPU (a PostgreSQL store's backends).
	Server func(b *testing.B, st store.Store) (report func())
}

// Job is the benchmarks' no-op job.
func Job(now time.Time) store.InsertParams {
	return store.InsertParams{Task: "t", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 3, Now: now}
}

// Fill inserts n ready jobs in batches of 1000.
func Fill(b *testing.B, st store.Store, n int) {
	b.Helper()
	batch := make([]store.InsertParams, 1000)
	for i := range batch {
		batch[i] = Job(time.Now())
	}
	for done := 0; done < n; done += len(batch) {
		if _, err := st.Insert(b.Context(), batch[:min(len(batch), n-done)]); err != nil {
			b.Fatal(err)
		}
	}
}

// CPUTime returns the CPU time (user and system) the process has used (0
// where the platform does not tell; see internal/cputime).
func CPUTime() time.Duration {
	d, _ := cputime.Process()
	return d
}

// ReportCPU reports the process CPU used since start per b.N as
// cpu-ns/job. Call it deferred, after setup: defer ReportCPU(b, CPUTime()).
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUTime()-start)/float64(b.N), "cpu-ns/job")
}

// benchLease is the lease of a job the benchmarks claimed (worker "w").
func benchLease(j *store.Job) store.Lease {
	return store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}
}

func (h Bench) claimParams(max int) store.ClaimParams {
	return store.ClaimParams{WorkerID: "w", Max: max, Now: time.Now(), Order: h.Order}
}

// InsertOne enqueues one job per call from one goroutine.
func (h Bench) InsertOne(b *testing.B) {
	st := h.Open(b)
	ctx := b.Context()
	jobs := []store.InsertParams{Job(time.Now())}
	defer ReportCPU(b, CPUTime())
	for b.Loop() {
		jobs[0].Now = time.Now()
		if _, err := st.Insert(ctx, jobs); err != nil {
			b.Fatal(err)
		}
	}
}

// InsertBatch enqueues 1000 jobs per call.
func (h Bench) InsertBatch(b *testing.B) {
	st := h.Open(b)
	ctx := b.Context()
	batch := make([]store.InsertParams, 1000)
	for i := range batch {
		batch[i] = Job(time.Now())
	}
	defer ReportCPU(b, CPUTime())
	for done := 0; done < b.N; done += len(batch) {
		if _, err := st.Insert(ctx, batch[:min(len(batch), b.N-done)]); err != nil {
			b.Fatal(err)
		}
	}
}

// drain drains b.N jobs, claiming up to 100 at a time and handing each
// claim to ack.
func (h Bench) drain(b *testing.B, ack func(st store.Store, jobs []*store.Job)) {
	st := h.Open(b)
	Fill(b, st, b.N)
	b.ResetTimer()
	defer ReportCPU(b, CPUTime())
	if h.Server != nil {
		defer h.Server(b, st)()
	}
	for done := 0; done < b.N; {
		jobs, err := st.Claim(b.Context(), h.claimParams(100))
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		ack(st, jobs)
		done += len(jobs)
	}
}

func mustAll(b *testing.B, errs []error) {
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// ClaimComplete drains no-op jobs: claim 100, acknowledge them in one
// Complete call (as the engine's acknowledger does).
func (h Bench) ClaimComplete(b *testing.B) { h.claimComplete(b, nil) }

// ClaimCompleteKeep acknowledges with a result, so the rows are kept as
// completed.
func (h Bench) ClaimCompleteKeep(b *testing.B) { h.claimComplete(b, json.RawMessage(`{"ok":true}`)) }

func (h Bench) claimComplete(b *testing.B, result json.RawMessage) {
	acks := make([]store.CompleteParams, 0, 100)
	h.drain(b, func(st store.Store, jobs []*store.Job) {
		acks = acks[:0]
		for _, j := range jobs {
			acks = append(acks, store.CompleteParams{Lease: benchLease(j), Result: result, Now: time.Now()})
		}
		mustAll(b, st.Complete(b.Context(), acks))
	})
}

// ClaimCompleteOne claims 100 and acknowledges each job in its own call
// (the manual Client API; concurrent callers share a group commit).
func (h Bench) ClaimCompleteOne(b *testing.B) {
	h.drain(b, func(st store.Store, jobs []*store.Job) {
		for _, j := range jobs {
			mustAll(b, st.Complete(b.Context(), []store.CompleteParams{{Lease: benchLease(j), Now: time.Now()}}))
		}
	})
}

// ClaimFailDead claims 100 and dead-letters them in one call.
func (h Bench) ClaimFailDead(b *testing.B) {
	fails := make([]store.FailParams, 0, 100)
	h.drain(b, func(st store.Store, jobs []*store.Job) {
		fails = fails[:0]
		now := time.Now()
		for _, j := range jobs {
			fails = append(fails, store.FailParams{Lease: benchLease(j), Error: "boom", ErrorType: "error", Dead: true, Now: now})
		}
		mustAll(b, st.Fail(b.Context(), fails))
	})
}

// ClaimFailRetry claims 100 and snoozes each in one Fail call; the jobs
// are due at once, so the next claims take them again (each b.N is one
// claim and one failure).
func (h Bench) ClaimFailRetry(b *testing.B) {
	st := h.Open(b)
	ctx := b.Context()
	Fill(b, st, 100)
	fails := make([]store.FailParams, 0, 100)
	b.ResetTimer()
	defer ReportCPU(b, CPUTime())
	for done := 0; done < b.N; {
		jobs, err := st.Claim(ctx, h.claimParams(100))
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		fails = fails[:0]
		now := time.Now()
		for _, j := range jobs {
			fails = append(fails, store.FailParams{Lease: benchLease(j), Error: "boom", ErrorType: "error", RetryAt: now, Snooze: true, Now: now})
		}
		mustAll(b, st.Fail(ctx, fails))
		done += len(jobs)
	}
}

// Heartbeat renews 100 leases per call.
func (h Bench) Heartbeat(b *testing.B) {
	st := h.Open(b)
	ctx := b.Context()
	Fill(b, st, 100)
	jobs, err := st.Claim(ctx, h.claimParams(100))
	if err != nil || len(jobs) != 100 {
		b.Fatalf("Claim = %d, %v", len(jobs), err)
	}
	leases := make([]store.Lease, len(jobs))
	for i, j := range jobs {
		leases[i] = benchLease(j)
	}
	b.ResetTimer()
	defer ReportCPU(b, CPUTime())
	for done := 0; done < b.N; done += len(leases) {
		mustAll(b, st.Heartbeat(ctx, leases, time.Now()))
	}
}

// ClaimEmpty is a claim on an idle store (the idle poll).
func (h Bench) ClaimEmpty(b *testing.B) {
	st := h.Open(b)
	ctx := b.Context()
	defer ReportCPU(b, CPUTime())
	for b.Loop() {
		if _, err := st.Claim(ctx, h.claimParams(100)); err != nil {
			b.Fatal(err)
		}
	}
}
