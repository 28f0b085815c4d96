package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
	"github.com/queuemax/queuemax/runtime/store/storetest"
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

// BenchmarkLayouts runs the hot path's benchmarks on a one-shard store of
// each layout, for a same-run comparison:
//
//	go test -run '^$' -bench Layouts -count 3 ./runtime/store/sqlitestore
func BenchmarkLayouts(b *testing.B) {
	for _, layout := range []sqlitestore.Layout{sqlitestore.LayoutNative, sqlitestore.LayoutQueueMax} {
		lb := storetest.Bench{Open: func(b *testing.B) store.Store {
			st, err := sqlitestore.Open(b.Context(), sqlitestore.Options{Dir: b.TempDir(), Shards: 1, Layout: layout})
			if err != nil {
				b.Fatalf("Open: %v", err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}, Order: []int{0}}
		b.Run(string(layout)+"/InsertOne", lb.InsertOne)
		b.Run(string(layout)+"/InsertBatch", lb.InsertBatch)
		b.Run(string(layout)+"/ClaimCompleteKeep", lb.ClaimCompleteKeep)
	}
}

// bench binds the shared hot-path benchmarks to a one-shard store.
var bench = storetest.Bench{Open: func(b *testing.B) store.Store { return benchStore(b) }, Order: []int{0}}

func BenchmarkInsertOne(b *testing.B)         { bench.InsertOne(b) }
func BenchmarkInsertBatch(b *testing.B)       { bench.InsertBatch(b) }
func BenchmarkClaimComplete(b *testing.B)     { bench.ClaimComplete(b) }
func BenchmarkClaimCompleteOne(b *testing.B)  { bench.ClaimCompleteOne(b) }
func BenchmarkClaimCompleteKeep(b *testing.B) { bench.ClaimCompleteKeep(b) }
func BenchmarkClaimFailDead(b *testing.B)     { bench.ClaimFailDead(b) }
func BenchmarkClaimFailRetry(b *testing.B)    { bench.ClaimFailRetry(b) }
func BenchmarkHeartbeat(b *testing.B)         { bench.Heartbeat(b) }
func BenchmarkClaimEmpty(b *testing.B)        { bench.ClaimEmpty(b) }

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
	defer storetest.ReportCPU(b, storetest.CPUTime())
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

func BenchmarkClaimQueues(b *testing.B) {
	storetest.BenchmarkClaimQueues(b, func(b *testing.B) store.Store { return benchStore(b) })
}

// BenchmarkClaimCompleteRetained is the engine's hot path with the default
// Config: claims of 16 (the workers' count), acknowledged in one Complete
// call each, the rows kept as completed (retention) rather than deleted.
func BenchmarkClaimCompleteRetained(b *testing.B) {
	st := benchStore(b)
	ctx := b.Context()
	ps := make([]store.InsertParams, 0, 1000)
	for i := range b.N {
		ps = append(ps, store.InsertParams{Task: "noop", Payload: []byte(`{"n":1}`), MaxAttempts: 3, Now: time.Now()})
		if len(ps) == cap(ps) || i == b.N-1 {
			if _, err := st.Insert(ctx, ps); err != nil {
				b.Fatal(err)
			}
			ps = ps[:0]
		}
	}
	acks := make([]store.CompleteParams, 0, 16)
	b.ResetTimer()
	defer storetest.ReportCPU(b, storetest.CPUTime())
	for done := 0; done < b.N; {
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 16, Now: time.Now(), Order: []int{0}})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		acks = acks[:0]
		for _, j := range jobs {
			acks = append(acks, store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Keep: true, Now: time.Now()})
		}
		for _, err := range st.Complete(ctx, acks) {
			if err != nil {
				b.Fatal(err)
			}
		}
		done += len(jobs)
	}
}
