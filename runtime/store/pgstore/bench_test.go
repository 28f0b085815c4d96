package pgstore_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/pgstore"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

// The drain benchmarks count one b.N per job, so ns/op and allocs/op read
// as ns/job and allocs/job (client side; the server's CPU is not counted).
// Run them with
//
//	go test -run '^$' -bench . -benchmem ./runtime/store/pgstore
//
// BenchmarkFloor is the minimal SQL for the drain on the same server
// (claim batches of 100 with SKIP LOCKED; DELETE by id = ANY), for a
// same-run ratio.

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

func BenchmarkInsertOne(b *testing.B) {
	st := open(b, pgstore.Options{})
	ctx := b.Context()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		if _, err := st.Insert(ctx, []store.InsertParams{benchJob(time.Now())}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsertOneParallel(b *testing.B) {
	st := open(b, pgstore.Options{MaxConns: 16})
	ctx := b.Context()
	b.SetParallelism(16)
	defer reportCPU(b, cpuTime())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.Insert(ctx, []store.InsertParams{benchJob(time.Now())}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkInsertBatch enqueues 1000 jobs per call.
func BenchmarkInsertBatch(b *testing.B) {
	st := open(b, pgstore.Options{})
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
	if ps, ok := st.(*pgstore.Store); ok {
		defer reportServerCPU(b, ps.Pool(), poolCPU(ctx, ps.Pool()))
	}
	for done := 0; done < b.N; {
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: max, Now: time.Now()})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		ack(jobs)
		done += len(jobs)
	}
}

// BenchmarkClaimComplete drains no-op jobs: claim 100, acknowledge them in
// one call.
func BenchmarkClaimComplete(b *testing.B) {
	st := open(b, pgstore.Options{})
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

// BenchmarkCompleteClaim drains no-op jobs with CompleteClaim: each call
// acknowledges the previous batch of 100 and claims the next, in one
// round trip and one commit.
func BenchmarkCompleteClaim(b *testing.B) {
	st := open(b, pgstore.Options{})
	ctx := b.Context()
	fill(b, st, b.N)
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	defer reportServerCPU(b, st.Pool(), poolCPU(ctx, st.Pool()))
	acks := make([]store.CompleteParams, 0, 100)
	for done := 0; done < b.N; {
		errs, jobs, err := st.CompleteClaim(ctx, acks, store.ClaimParams{WorkerID: "w", Max: 100, Now: time.Now()})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("CompleteClaim = %d, %v", len(jobs), err)
		}
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		acks = acks[:0]
		for _, j := range jobs {
			acks = append(acks, store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Now: time.Now()})
		}
		done += len(jobs)
	}
	for _, err := range st.Complete(ctx, acks) {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimCompleteOne claims 100 and acknowledges each job in its
// own call.
func BenchmarkClaimCompleteOne(b *testing.B) {
	st := open(b, pgstore.Options{})
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

// BenchmarkClaimFailDead claims 100 and dead-letters them in one call.
func BenchmarkClaimFailDead(b *testing.B) {
	st := open(b, pgstore.Options{})
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

// BenchmarkHeartbeat renews 100 leases per call.
func BenchmarkHeartbeat(b *testing.B) {
	st := open(b, pgstore.Options{})
	ctx := b.Context()
	fill(b, st, 100)
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: time.Now()})
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

// BenchmarkClaimEmpty is a claim on an idle queue (the idle poll).
func BenchmarkClaimEmpty(b *testing.B) {
	st := open(b, pgstore.Options{})
	ctx := b.Context()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		if _, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloor is the minimal SQL for draining a job on the same server,
// to compare with BenchmarkClaimComplete: claim batches of 100 with one
// UPDATE over SELECT … FOR UPDATE SKIP LOCKED, then DELETE … WHERE id =
// ANY($1) and lease = $2. Only the drain is timed.
func BenchmarkFloor(b *testing.B) {
	dsn := testDSN(b)
	schema := freshSchema(b, dsn)
	ctx := b.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	tbl := pgx.Identifier{schema, "q"}.Sanitize()
	for _, q := range []string{
		`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE ` + tbl + ` (id bigserial PRIMARY KEY, payload json NOT NULL, status smallint NOT NULL DEFAULT 0, lease bigint)`,
		`CREATE INDEX ON ` + tbl + ` (id) WHERE status = 0`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+tbl+` (payload) SELECT '{"n":1}' FROM generate_series(1, $1)`, b.N); err != nil {
		b.Fatal(err)
	}
	claim := `UPDATE ` + tbl + ` SET status = 1, lease = $1 WHERE id = ANY(ARRAY(SELECT id FROM ` + tbl + `
		WHERE status = 0 ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)) RETURNING id, payload`
	del := `DELETE FROM ` + tbl + ` WHERE id = ANY($1) AND lease = $2`
	ids := make([]int64, 0, 100)
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	pid := conn.PgConn().PID()
	defer func(start time.Duration) {
		b.ReportMetric(float64(backendCPU(pid)-start)/float64(b.N), "srv-cpu-ns/job")
	}(backendCPU(pid))
	for done := 0; done < b.N; {
		rows, err := conn.Query(ctx, claim, done)
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
		if len(ids) == 0 {
			b.Fatal("floor: nothing claimed")
		}
		if _, err := conn.Exec(ctx, del, ids, done); err != nil {
			b.Fatal(err)
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

func BenchmarkClaimQueues(b *testing.B) {
	storetest.BenchmarkClaimQueues(b, func(b *testing.B) store.Store { return open(b, pgstore.Options{}) })
}

// backendCPU returns the CPU time (user and system) PostgreSQL's backend
// process pid has used, read from /proc (the server runs on this host);
// zero if it cannot be read.
func backendCPU(pid uint32) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// poolCPU sums backendCPU over the pool's idle connections, by backend.
func poolCPU(ctx context.Context, pool *pgxpool.Pool) map[uint32]time.Duration {
	m := make(map[uint32]time.Duration)
	for _, c := range pool.AcquireAllIdle(ctx) {
		pid := c.Conn().PgConn().PID()
		m[pid] = backendCPU(pid)
		c.Release()
	}
	return m
}

// reportServerCPU reports the CPU the pool's backends used since start,
// per b.N, as srv-cpu-ns/job (10 ms resolution). Call it deferred, after
// setup: defer reportServerCPU(b, pool, poolCPU(ctx, pool)).
func reportServerCPU(b *testing.B, pool *pgxpool.Pool, start map[uint32]time.Duration) {
	var used time.Duration
	for pid, cpu := range poolCPU(context.Background(), pool) {
		used += cpu - start[pid]
	}
	b.ReportMetric(float64(used)/float64(b.N), "srv-cpu-ns/job")
}
