package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"
)

// The minimal floor: the least SQL a lease-based queue can do per job on
// the same shard files, pragmas and goroutine layout, with nothing of
// queuemax's schema. One narrow table, no secondary index; claims of a
// batch by one UPDATE … RETURNING, deletes of the batch by id in one
// transaction. Every ratio the bench prints is against this floor; the
// schema floor (measureFloor) stays beside it as what queuemax's schema
// costs the same SQL work.
const (
	minSchema = `CREATE TABLE IF NOT EXISTS fila (id INTEGER PRIMARY KEY, status TEXT NOT NULL,
		lease_until INTEGER, payload TEXT NOT NULL)`
	minInsert = `INSERT INTO fila (status, payload) VALUES ('pending', ?)`
	minClaim  = `UPDATE fila SET status = 'processing', lease_until = ?1
		WHERE id IN (SELECT id FROM fila WHERE status = 'pending' ORDER BY id LIMIT ?2)
		RETURNING id, payload`
	minDelete = `DELETE FROM fila WHERE id = ?`
)

// minFloor is what the minimal floor measured. Rates are rows (jobs) per
// second, CPU the process's user+system time per row.
type minFloor struct {
	Insert1, InsertBatch, Process float64
	Insert1CPU, InsertBatchCPU    time.Duration
	ProcessCPU                    time.Duration
	// SmallBatch and ProcessSmall: processing with claims of SmallBatch
	// rows (zero if not measured).
	SmallBatch   int
	ProcessSmall float64
}

// measureMinFloor measures the minimal floor on shards fresh files in dir:
// jobs rows inserted one per transaction (random shard, one goroutine),
// jobs more 1,000 per transaction (shards in parallel), then all of them
// processed 100 per claim, one goroutine per shard; with smallBatch > 0,
// jobs more inserted and processed smallBatch per claim.
func measureMinFloor(ctx context.Context, dir string, shards, jobs, smallBatch int) (minFloor, error) {
	var res minFloor
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
		if _, err := db.ExecContext(ctx, minSchema); err != nil {
			return res, err
		}
		if ins[i], err = db.PrepareContext(ctx, minInsert); err != nil {
			return res, err
		}
	}
	payload := func(n int) string { return fmt.Sprintf(`{"n":%d}`, n) }

	cpu0, start := cpuTime(), time.Now()
	for n := range jobs {
		i := rand.IntN(shards)
		tx, err := dbs[i].BeginTx(ctx, nil)
		if err != nil {
			return res, err
		}
		if _, err := tx.StmtContext(ctx, ins[i]).ExecContext(ctx, payload(n)); err != nil {
			tx.Rollback()
			return res, err
		}
		if err := tx.Commit(); err != nil {
			return res, err
		}
	}
	res.Insert1, res.Insert1CPU = rate(jobs, time.Since(start)), perJob(cpuTime()-cpu0, jobs)

	batched := func() error {
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
				for k := 0; k < 1000 && done < mine; k++ {
					if _, err := st.ExecContext(ctx, payload(done)); err != nil {
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
	cpu0, start = cpuTime(), time.Now()
	if err := batched(); err != nil {
		return res, err
	}
	res.InsertBatch, res.InsertBatchCPU = rate(jobs, time.Since(start)), perJob(cpuTime()-cpu0, jobs)

	cpu0, start = cpuTime(), time.Now()
	processed, err := minProcess(ctx, dbs, 100)
	if err != nil {
		return res, err
	}
	res.Process, res.ProcessCPU = rate(processed, time.Since(start)), perJob(cpuTime()-cpu0, processed)
	if processed != 2*jobs {
		return res, fmt.Errorf("minimal floor processed %d rows, want %d", processed, 2*jobs)
	}
	if smallBatch > 0 {
		if err := batched(); err != nil {
			return res, err
		}
		start = time.Now()
		processed, err := minProcess(ctx, dbs, smallBatch)
		if err != nil {
			return res, err
		}
		res.SmallBatch, res.ProcessSmall = smallBatch, rate(processed, time.Since(start))
		if processed != jobs {
			return res, fmt.Errorf("minimal floor processed %d rows, want %d", processed, jobs)
		}
	}
	return res, nil
}

// minProcess claims batch rows per transaction and deletes them by id in
// a second one, one goroutine per shard, until every shard is empty.
func minProcess(ctx context.Context, dbs []*sql.DB, batch int) (int, error) {
	return drainShards(ctx, dbs, minClaim, minDelete,
		func() []any { return []any{time.Now().Add(time.Minute).UnixMilli(), batch} },
		func(rows *sql.Rows) (int64, error) {
			var id int64
			var payload string
			err := rows.Scan(&id, &payload)
			return id, err
		})
}

func perJob(d time.Duration, n int) time.Duration { return d / time.Duration(max(n, 1)) }
