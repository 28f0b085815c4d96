package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/queuemax/queuemax/internal/cputime"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// floorResult is what SQLite itself does on one shard layout: the minimal
// floor (Min), and the same SQL on queuemax's schema.
type floorResult struct {
	Shards int
	Jobs   int
	// Min is the minimal floor measured on the same layout right before
	// (minfloor.go): every ratio is against it. The fields below are the
	// schema floor, the same SQL work on queuemax's own tables and
	// indexes, kept beside it as what the schema costs.
	Min minFloor
	// Insert1CPU, InsertBatchCPU: process CPU per row of the inserts.
	Insert1CPU, InsertBatchCPU time.Duration
	// Insert1 is rows/s inserting one row per transaction from one
	// goroutine, the shard picked at random per row.
	Insert1 float64
	// InsertBatch is rows/s inserting 1,000 rows per transaction, the
	// shards written in parallel.
	InsertBatch float64
	// ProcessCPU is the CPU time (user+system, whole process) per job of
	// the processing phase.
	ProcessCPU time.Duration
	// ProcessSmall is Process with SmallBatch rows per transaction
	// instead of 100 (zero if not measured).
	SmallBatch   int
	ProcessSmall float64
	// Process is jobs/s claiming 100 jobs in one UPDATE … RETURNING
	// transaction, then deleting them by id in a second transaction of 100
	// DELETEs, one goroutine per shard, until the shards are empty.
	Process float64
}

// Floor SQL. The claim sets what any lease-based claim must set and returns
// what a worker needs to run the job; the delete is the acknowledgement.
// The rows are the default queue's, which idx_qm_ready holds (its
// predicate is repeated so that the claim walks it).
const (
	floorInsert = `INSERT INTO fila (payload, status, priority, tentativas, max_tentativas, retry_delay, task,
		created_at, shard_id) VALUES (?, 'pending', 0, 0, 4, 60, ?, ?, ?)`
	floorClaim = `UPDATE fila SET status = 'processing', worker_id = ?1, heartbeat = ?2, started_at = ?2,
		tentativas = tentativas + 1, lease = ?3
		WHERE id IN (SELECT id FROM fila WHERE status = 'pending' AND queue = 'default' ORDER BY priority DESC, id LIMIT ?4)
		RETURNING id, payload, task, tentativas`
	floorDelete = `DELETE FROM fila WHERE id = ?`
)

// floorDSN uses the pragmas queuemax's writer uses with its default Config
// (sqlitestore's dsn): WAL, synchronous NORMAL, 10,000-page cache, 256 MiB
// mmap, in-memory temp store, BEGIN IMMEDIATE.
func floorDSN(path string) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(30000)", "journal_mode(WAL)", "synchronous(NORMAL)",
		"cache_size(10000)", "mmap_size(268435456)", "temp_store(MEMORY)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// measureFloor measures the floor for shards files and jobs jobs in dir,
// which must be empty; with smallBatch > 0 it also measures processing
// with claims and deletes of that many rows. This is the schema floor: the
// tables and indexes are queuemax's own, created by opening and closing a
// store there, so it measures what the schema costs, not the design (the
// minimal floor, measureMinFloor, does that).
func measureFloor(ctx context.Context, dir string, shards, jobs, smallBatch int, layout sqlitestore.Layout) (floorResult, error) {
	res := floorResult{Shards: shards, Jobs: jobs}
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Dir: dir, Shards: shards, Layout: layout})
	if err != nil {
		return res, err
	}
	if err := st.Close(); err != nil {
		return res, err
	}
	dbs := make([]*sql.DB, shards)
	ins := make([]*sql.Stmt, shards)
	defer func() {
		for i := range dbs {
			if ins[i] != nil {
				ins[i].Close()
			}
			if dbs[i] != nil {
				dbs[i].Close()
			}
		}
	}()
	for i := range dbs {
		db, err := sql.Open("sqlite", floorDSN(filepath.Join(dir, fmt.Sprintf("shard_%d.db", i))))
		if err != nil {
			return res, err
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		dbs[i] = db
		if ins[i], err = db.PrepareContext(ctx, floorInsert); err != nil {
			return res, err
		}
	}
	payload := func(n int) string { return fmt.Sprintf(`{"n":%d}`, n) }

	// One row per transaction, one goroutine, as many rows as the
	// scenario enqueues (the rate falls as the tables and the WAL grow).
	n1 := jobs
	cpu0, start := cpuTime(), time.Now()
	for n := range n1 {
		i := rand.IntN(shards)
		tx, err := dbs[i].BeginTx(ctx, nil)
		if err != nil {
			return res, err
		}
		if _, err := tx.StmtContext(ctx, ins[i]).ExecContext(ctx, payload(n), "bench.noop", store.FormatTime(time.Now()), i); err != nil {
			tx.Rollback()
			return res, err
		}
		if err := tx.Commit(); err != nil {
			return res, err
		}
	}
	res.Insert1, res.Insert1CPU = rate(n1, time.Since(start)), perJob(cpuTime()-cpu0, n1)

	// 1,000 rows per transaction, shards in parallel.
	cpu0, start = cpuTime(), time.Now()
	if err := floorInsertBatched(ctx, dbs, ins, jobs, payload); err != nil {
		return res, err
	}
	res.InsertBatch, res.InsertBatchCPU = rate(jobs, time.Since(start)), perJob(cpuTime()-cpu0, jobs)

	// Claim 100 per transaction, delete 100 per transaction.
	cpu0, start = cpuTime(), time.Now()
	processed, err := floorProcess(ctx, dbs, 100)
	if err != nil {
		return res, err
	}
	res.Process = rate(processed, time.Since(start))
	res.ProcessCPU = (cpuTime() - cpu0) / time.Duration(max(processed, 1))
	if want := n1 + jobs; processed != want {
		return res, fmt.Errorf("floor processed %d rows, want %d", processed, want)
	}

	// The same with smaller batches, as a queue whose claims are bounded
	// by its worker count makes them.
	if smallBatch > 0 {
		if err := floorInsertBatched(ctx, dbs, ins, jobs, payload); err != nil {
			return res, err
		}
		start = time.Now()
		processed, err := floorProcess(ctx, dbs, smallBatch)
		if err != nil {
			return res, err
		}
		res.SmallBatch = smallBatch
		res.ProcessSmall = rate(processed, time.Since(start))
		if processed != jobs {
			return res, fmt.Errorf("floor processed %d rows, want %d", processed, jobs)
		}
	}
	return res, nil
}

// floorInsertBatched inserts jobs rows spread over the shards, 1,000 per
// transaction, the shards in parallel.
func floorInsertBatched(ctx context.Context, dbs []*sql.DB, ins []*sql.Stmt, jobs int, payload func(int) string) error {
	shards := len(dbs)
	return eachShard(shards, func(i int) error {
		mine := jobs / shards
		if i < jobs%shards {
			mine++
		}
		for done := 0; done < mine; {
			tx, err := dbs[i].BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			st := tx.StmtContext(ctx, ins[i])
			now := store.FormatTime(time.Now())
			for k := 0; k < 1000 && done < mine; k++ {
				if _, err := st.ExecContext(ctx, payload(done), "bench.noop", now, i); err != nil {
					tx.Rollback()
					return err
				}
				done++
			}
			if err := tx.Commit(); err != nil {
				return err
			}
		}
		return nil
	})
}

// floorProcess claims batch rows per transaction and deletes them by id in
// a second transaction, one goroutine per shard, until every shard is
// empty, and returns how many rows it processed.
func floorProcess(ctx context.Context, dbs []*sql.DB, batch int) (int, error) {
	return drainShards(ctx, dbs, floorClaim, floorDelete,
		func() []any { return []any{"floor", store.FormatTime(time.Now()), rand.Int64(), batch} },
		func(rows *sql.Rows) (int64, error) {
			var (
				id, attempts  int64
				payload, task string
			)
			err := rows.Scan(&id, &payload, &task, &attempts)
			return id, err
		})
}

// drainShards is both floors' processing loop: one goroutine per shard
// claims rows with claimSQL (its arguments from args, its rows read by
// scan, which returns the row's id) in one transaction, deletes them by id
// with deleteSQL in a second, and stops when a claim finds nothing. It
// returns how many rows it processed.
func drainShards(ctx context.Context, dbs []*sql.DB, claimSQL, deleteSQL string, args func() []any, scan func(*sql.Rows) (int64, error)) (int, error) {
	var mu sync.Mutex
	processed := 0
	err := eachShard(len(dbs), func(i int) error {
		claim, err := dbs[i].PrepareContext(ctx, claimSQL)
		if err != nil {
			return err
		}
		defer claim.Close()
		del, err := dbs[i].PrepareContext(ctx, deleteSQL)
		if err != nil {
			return err
		}
		defer del.Close()
		var ids []int64
		n := 0
		for {
			ids = ids[:0]
			tx, err := dbs[i].BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			rows, err := tx.StmtContext(ctx, claim).QueryContext(ctx, args()...)
			if err != nil {
				tx.Rollback()
				return err
			}
			for rows.Next() {
				id, err := scan(rows)
				if err != nil {
					rows.Close()
					tx.Rollback()
					return err
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := tx.Commit(); err != nil {
				return err
			}
			if len(ids) == 0 {
				break
			}
			tx, err = dbs[i].BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			st := tx.StmtContext(ctx, del)
			for _, id := range ids {
				if _, err := st.ExecContext(ctx, id); err != nil {
					tx.Rollback()
					return err
				}
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			n += len(ids)
		}
		mu.Lock()
		processed += n
		mu.Unlock()
		return nil
	})
	return processed, err
}

// eachShard runs fn for every shard index in parallel and returns the
// errors joined.
func eachShard(shards int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, shards)
	for i := range shards {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	var msgs []string
	for i, err := range errs {
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("shard %d: %v", i, err))
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// cpuTime returns the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	d, _ := cputime.Process()
	return d
}
