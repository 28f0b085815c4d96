package sqlitestore_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// The benchmarks count one b.N per job, so ns/op and allocs/op read as
// ns/job and allocs/job. Run them with
//
//	go test -run '^$' -bench . -benchmem ./runtime/store/sqlitestore
//
// BenchmarkFloor is the minimal SQL for the drain on the same driver
// (claim batches of 100; DELETE by id), for a same-run ratio.

func benchStore(b *testing.B) *sqlitestore.Store {
	b.Helper()
	st, err := sqlitestore.Open(b.Context(), sqlitestore.Options{Dir: b.TempDir(), Shards: 1})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func benchJob(now time.Time) store.InsertParams {
	return store.InsertParams{Task: "t", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 3, Now: now}
}

// fill inserts n ready jobs in batches of 1000.
func fill(b *testing.B, st store.Store, n int) {
	b.Helper()
	batch := make([]store.InsertParams, 1000)
	for i := range batch {
		batch[i] = benchJob(time.Now())
	}
	for done := 0; done < n; done += len(batch) {
		if _, err := st.Insert(b.Context(), batch[:min(len(batch), n-done)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertOne enqueues one job per call from one goroutine.
func BenchmarkInsertOne(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	jobs := []store.InsertParams{benchJob(time.Now())}
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		if _, err := st.Insert(ctx, jobs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertBatch enqueues 1000 jobs per call.
func BenchmarkInsertBatch(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	batch := make([]store.InsertParams, 1000)
	for i := range batch {
		batch[i] = benchJob(time.Now())
	}
	defer reportCPU(b, cpuTime())
	for done := 0; done < b.N; done += len(batch) {
		if _, err := st.Insert(ctx, batch[:min(len(batch), b.N-done)]); err != nil {
			b.Fatal(err)
		}
	}
}

// claimLoop drains b.N jobs, claiming up to max at a time and handing each
// claim to ack.
func claimLoop(b *testing.B, st store.Store, max int, ack func(jobs []*store.Job)) {
	fill(b, st, b.N)
	ctx := b.Context()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	for done := 0; done < b.N; {
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: max, Now: time.Now(), Order: []int{0}})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		ack(jobs)
		done += len(jobs)
	}
}

// BenchmarkClaimComplete drains no-op jobs: claim 100, acknowledge them in
// one Complete call (as the engine's ack batches do).
func BenchmarkClaimComplete(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	acks := make([]store.CompleteParams, 0, 100)
	claimLoop(b, st, 100, func(jobs []*store.Job) {
		acks = acks[:0]
		for _, j := range jobs {
			acks = append(acks, store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Now: time.Now()})
		}
		for _, err := range st.Complete(ctx, acks) {
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClaimCompleteOne claims 100 and acknowledges each job in its
// own call (prefetched jobs, the manual Client API).
func BenchmarkClaimCompleteOne(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	claimLoop(b, st, 100, func(jobs []*store.Job) {
		for _, j := range jobs {
			err := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Now: time.Now()}})[0]
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClaimCompleteKeep acknowledges with a result, so the rows are
// kept as completed.
func BenchmarkClaimCompleteKeep(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	acks := make([]store.CompleteParams, 0, 100)
	res := json.RawMessage(`{"ok":true}`)
	claimLoop(b, st, 100, func(jobs []*store.Job) {
		acks = acks[:0]
		for _, j := range jobs {
			acks = append(acks, store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Result: res, Now: time.Now()})
		}
		for _, err := range st.Complete(ctx, acks) {
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClaimFailDead claims 100 and dead-letters them in one call.
func BenchmarkClaimFailDead(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	fails := make([]store.FailParams, 0, 100)
	claimLoop(b, st, 100, func(jobs []*store.Job) {
		fails = fails[:0]
		now := time.Now()
		for _, j := range jobs {
			fails = append(fails, store.FailParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"},
				Error: "boom", ErrorType: "error", Dead: true, Now: now})
		}
		for _, err := range st.Fail(ctx, fails) {
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClaimFailRetry claims 100 and schedules each for a retry in one
// Fail call; the retries are due at once, so the next claims take them
// again (each b.N is one claim and one failure).
func BenchmarkClaimFailRetry(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	fill(b, st, 100)
	fails := make([]store.FailParams, 0, 100)
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	for done := 0; done < b.N; {
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: time.Now(), Order: []int{0}})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		fails = fails[:0]
		now := time.Now()
		for _, j := range jobs {
			fails = append(fails, store.FailParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"},
				Error: "boom", ErrorType: "error", RetryAt: now, Snooze: true, Now: now})
		}
		for _, err := range st.Fail(ctx, fails) {
			if err != nil {
				b.Fatal(err)
			}
		}
		done += len(jobs)
	}
}

// BenchmarkHeartbeat renews 100 leases per call.
func BenchmarkHeartbeat(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	fill(b, st, 100)
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: time.Now(), Order: []int{0}})
	if err != nil || len(jobs) != 100 {
		b.Fatalf("Claim = %d, %v", len(jobs), err)
	}
	leases := make([]store.Lease, len(jobs))
	for i, j := range jobs {
		leases[i] = store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}
	}
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	for done := 0; done < b.N; done += len(leases) {
		for _, err := range st.Heartbeat(ctx, leases, time.Now()) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkClaimEmpty is a claim on an idle shard (the idle poll).
func BenchmarkClaimEmpty(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		if _, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: time.Now(), Order: []int{0}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloor is the minimal SQL for draining a job on the same driver
// with the same pragmas' essentials (WAL, synchronous NORMAL), to compare
// with BenchmarkClaimComplete: claim in batches of 100 by one UPDATE …
// RETURNING, delete each claimed job by id, one transaction per claim and
// one per batch of deletes. Only the drain is timed.
func BenchmarkFloor(b *testing.B) {
	path := filepath.Join(b.TempDir(), "floor.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := b.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE q (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, status INTEGER NOT NULL, lease INTEGER);
		CREATE INDEX q_ready ON q(status, id)`); err != nil {
		b.Fatal(err)
	}
	tx, _ := db.BeginTx(ctx, nil)
	ins, _ := tx.PrepareContext(ctx, `INSERT INTO q (payload, status) VALUES (?, 0)`)
	for range b.N {
		if _, err := ins.ExecContext(ctx, `{"n":1}`); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	claim, _ := db.PrepareContext(ctx, `UPDATE q SET status = 1, lease = ? WHERE id IN (SELECT id FROM q WHERE status = 0 ORDER BY id LIMIT 100) RETURNING id, payload`)
	del, _ := db.PrepareContext(ctx, `DELETE FROM q WHERE id = ? AND lease = ?`)
	ids := make([]int64, 0, 100)
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	for done := 0; done < b.N; {
		tx, _ := db.BeginTx(ctx, nil)
		rows, err := tx.StmtContext(ctx, claim).QueryContext(ctx, done)
		if err != nil {
			b.Fatal(err)
		}
		ids = ids[:0]
		for rows.Next() {
			var id int64
			var payload []byte
			rows.Scan(&id, &payload)
			ids = append(ids, id)
		}
		rows.Close()
		tx.Commit()
		tx, _ = db.BeginTx(ctx, nil)
		d := tx.StmtContext(ctx, del)
		for _, id := range ids {
			if _, err := d.ExecContext(ctx, id, done); err != nil {
				b.Fatal(err)
			}
		}
		tx.Commit()
		if len(ids) == 0 {
			b.Fatal("floor: nothing claimed")
		}
		done += len(ids)
	}
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU used since start per b.N as
// cpu-ns/job: on a shared machine it is less disturbed than wall time.
// Call it deferred, after setup: defer reportCPU(b, cpuTime()).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/job")
}
