package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// pgBulkJobs is the bulk scenario's size: the outside harness's 20,000
// jobs, 1,000 per call.
const pgBulkJobs = 20000

// pgBulk measures what an application's bulk enqueue costs, as measured
// from outside (issue 35): EnqueueMany of 1,000 jobs of a typed task
// (queuemax.Define, so every payload is encoded and validated against
// its type), the ids returned, on a fresh schema with the default Config,
// beside pgx CopyFrom of the same payloads into a one-column table and
// River's InsertManyFast (also COPY) of the same jobs, same server, same
// run. Unlike the enqueue scenario (an untyped handler, no validation,
// 200,000 jobs against the floor's indexed table and River's InsertMany)
// nothing here is warmed up but the connections.
func (b *bench) pgBulk(ctx context.Context) error {
	n := b.n(pgBulkJobs, 2000)
	label := fmt.Sprintf("pg bulk %d typed jobs", n)
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i], _ = json.Marshal(noopArgs{N: i})
	}

	// The floor: COPY of the payloads into a one-column table.
	schema, drop := b.pg.schema("bulkfloor")
	defer drop()
	pool, err := pgxpool.New(ctx, b.pg.floor)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE SCHEMA %[1]s; CREATE TABLE %[1]s.payloads (payload jsonb NOT NULL)`, schema)); err != nil {
		return err
	}
	m := b.pg.startCPU(ctx, pgApp()+"-floor")
	start := time.Now()
	for done := 0; done < n; done += 1000 {
		rows := make([][]any, min(1000, n-done))
		for i := range rows {
			rows[i] = []any{payloads[done+i]}
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{schema, "payloads"}, []string{"payload"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("floor COPY: %w", err)
		}
	}
	copyRate := rate(n, time.Since(start))
	var copyCPU cpuPair
	copyCPU.Client, copyCPU.Server = m.stop(ctx, n)

	// queuemax: a typed task, the default Config, a fresh schema.
	qs, qdrop := b.pg.schema("bulk")
	defer qdrop()
	h := queuemax.Define(taskNoop, queuemax.TaskOptions{}, func(context.Context, noopArgs) error { return nil })
	st, err := queuemaxpg.Open(ctx, b.pg.dsn, queuemaxpg.Options{Schema: qs})
	if err != nil {
		return err
	}
	c, err := queuemax.Open(ctx, queuemax.Config{Store: st, Handlers: []queuemax.Handler{h}, Logger: b.log})
	if err != nil {
		return err
	}
	defer c.Close()
	m = b.pg.startCPU(ctx, pgApp())
	start = time.Now()
	var ids []queuemax.JobID
	for done := 0; done < n; done += 1000 {
		ps := make([]queuemax.EnqueueParams, min(1000, n-done))
		for i := range ps {
			ps[i] = queuemax.EnqueueParams{Task: taskNoop, Payload: noopArgs{N: done + i}}
		}
		got, err := c.EnqueueMany(ctx, ps)
		if err != nil {
			return err
		}
		ids = append(ids, got...)
	}
	qmRate := rate(n, time.Since(start))
	var qmCPU cpuPair
	qmCPU.Client, qmCPU.Server = m.stop(ctx, n)
	checkIDs(b.rep, label, ids)

	b.rep.add(label, "COPY of the payloads into a one-column table, 1,000 per call", copyRate, "rows/s").
		note("%s", cpuNote(copyCPU, copyCPU, b.pg.local))
	b.rep.add(label, "EnqueueMany of 1,000 typed jobs, default Config, fresh schema", qmRate, "jobs/s").
		note("%s", cpuNote(qmCPU, copyCPU, b.pg.local))
	r := b.rep.add(label, "EnqueueMany ÷ the one-column COPY", qmRate/copyRate, "×")
	r.target("≥ 0.5×", r.Value >= 0.5)
	b.addCPU(label, "EnqueueMany", qmCPU, copyCPU)

	river, version, err := b.pgRiverRun(ctx, n, "-fast")
	if err != nil {
		fmt.Fprintf(os.Stderr, "queuemax-bench: River's InsertManyFast not measured: %v\n", err)
		return nil
	}
	b.rep.add(label, "River "+version+" InsertManyFast, batches of 1,000", river, "jobs/s")
	r = b.rep.add(label, "EnqueueMany ÷ River's InsertManyFast", qmRate/river, "×")
	r.target("≥ 1.5×", r.Value >= 1.5)
	return nil
}
