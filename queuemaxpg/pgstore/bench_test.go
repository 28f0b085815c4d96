package pgstore_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

// The drain benchmarks count one b.N per job, so ns/op and allocs/op read
// as ns/job and allocs/job on the client; the drains also report the
// server backends' CPU as srv-cpu-ns/job.
// Run them with
//
//	go test -run '^$' -bench . -benchmem ./queuemaxpg/pgstore
//
// BenchmarkFloor is the minimal SQL for the drain on the same server
// (claim batches of 100 with SKIP LOCKED; DELETE by id = ANY), for a
// same-run ratio.

// bench binds the shared hot-path benchmarks to the store, with the
// server's CPU reported for the drains.
var bench = storetest.Bench{
	Open: func(b *testing.B) store.Store { return open(b, pgstore.Options{}) },
	Server: func(b *testing.B, st store.Store) func() {
		pool := st.(*pgstore.Store).Pool()
		start := poolCPU(b.Context(), pool)
		return func() { reportServerCPU(b, pool, start) }
	},
}

func BenchmarkInsertOne(b *testing.B)         { bench.InsertOne(b) }
func BenchmarkInsertBatch(b *testing.B)       { bench.InsertBatch(b) }
func BenchmarkClaimComplete(b *testing.B)     { bench.ClaimComplete(b) }
func BenchmarkClaimCompleteOne(b *testing.B)  { bench.ClaimCompleteOne(b) }
func BenchmarkClaimCompleteKeep(b *testing.B) { bench.ClaimCompleteKeep(b) }
func BenchmarkClaimFailRetry(b *testing.B)    { bench.ClaimFailRetry(b) }
func BenchmarkClaimFailDead(b *testing.B)     { bench.ClaimFailDead(b) }
func BenchmarkHeartbeat(b *testing.B)         { bench.Heartbeat(b) }
func BenchmarkClaimEmpty(b *testing.B)        { bench.ClaimEmpty(b) }

func BenchmarkInsertOneParallel(b *testing.B) {
	st := open(b, pgstore.Options{MaxConns: 16})
	ctx := b.Context()
	b.SetParallelism(16)
	defer storetest.ReportCPU(b, storetest.CPUTime())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.Insert(ctx, []store.InsertParams{storetest.Job(time.Now())}); err != nil {
				b.Error(err)
				return
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
	storetest.Fill(b, st, b.N)
	b.ResetTimer()
	defer storetest.ReportCPU(b, storetest.CPUTime())
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
	// Statistics first: on a table filled since its last ANALYZE the
	// planner sorts every pending row for each claim (see the queuemax-bench
	// floor), a cost the store's claims do not pay.
	if _, err := conn.Exec(ctx, `ANALYZE `+tbl); err != nil {
		b.Fatal(err)
	}
	claim := `UPDATE ` + tbl + ` SET status = 1, lease = $1 WHERE id = ANY(ARRAY(SELECT id FROM ` + tbl + `
		WHERE status = 0 ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)) RETURNING id, payload`
	del := `DELETE FROM ` + tbl + ` WHERE id = ANY($1) AND lease = $2`
	ids := make([]int64, 0, 100)
	b.ResetTimer()
	defer storetest.ReportCPU(b, storetest.CPUTime())
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
