package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
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
// nothing here is warmed up but the connections. Beside them: the same
// enqueue into an index-less inbox and the move out of it (pgBulkInbox),
// and what the server pays per part of a batch (pgBulkParts).
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
	c, err := b.pgBulkClient(ctx, qs)
	if err != nil {
		return err
	}
	defer c.Close()
	m = b.pg.startCPU(ctx, pgApp())
	qmRate, ids, err := pgBulkEnqueue(ctx, c, n)
	if err != nil {
		return err
	}
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

	inboxRate, err := b.pgBulkInbox(ctx, label, n, qmCPU, copyRate, copyCPU)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}

	if err := b.pgBulkParts(ctx, qs, payloads); err != nil {
		return fmt.Errorf("bulk parts: %w", err)
	}

	river, version, err := b.pgRiverRun(ctx, n, "-fast")
	if err != nil {
		fmt.Fprintf(os.Stderr, "queuemax-bench: River's InsertManyFast not measured: %v\n", err)
		return nil
	}
	b.rep.add(label, "River "+version+" InsertManyFast, batches of 1,000", river, "jobs/s")
	r = b.rep.add(label, "EnqueueMany ÷ River's InsertManyFast", qmRate/river, "×")
	r.target("≥ 1.5×", r.Value >= 1.5)
	b.rep.add(label, "inbox ceiling ÷ River's InsertManyFast", inboxRate/river, "×")
	return nil
}

// pgBulkClient opens a client of the bulk scenario's typed task on a
// fresh schema with the default Config.
func (b *bench) pgBulkClient(ctx context.Context, schema string) (*queuemax.Client, error) {
	h := queuemax.Define(taskNoop, queuemax.TaskOptions{}, func(context.Context, noopArgs) error { return nil })
	st, err := queuemaxpg.Open(ctx, b.pg.dsn, queuemaxpg.Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	return queuemax.Open(ctx, queuemax.Config{Store: st, Handlers: []queuemax.Handler{h}, Logger: b.log})
}

// pgBulkEnqueue enqueues n jobs of the typed task with EnqueueMany, 1,000
// per call, and returns the rate and the ids.
func pgBulkEnqueue(ctx context.Context, c *queuemax.Client, n int) (float64, []queuemax.JobID, error) {
	start := time.Now()
	var ids []queuemax.JobID
	for done := 0; done < n; done += 1000 {
		ps := make([]queuemax.EnqueueParams, min(1000, n-done))
		for i := range ps {
			ps[i] = queuemax.EnqueueParams{Task: taskNoop, Payload: noopArgs{N: done + i}}
		}
		got, err := c.EnqueueMany(ctx, ps)
		if err != nil {
			return 0, nil, err
		}
		ids = append(ids, got...)
	}
	return rate(n, time.Since(start)), ids, nil
}

// The inbox's columns: those the store's COPY writes (bulkJobCols) and
// created_at, the rest of a pending job being defaults.
var inboxCols = strings.Join(append(slices.Clip(bulkJobCols), "created_at"), ", ")

// inboxSwap makes schema {s}'s jobs table an append-only inbox under
// the store: the stored table is renamed jobs_stored (its sequence keeps
// its name, so the store's ids come from it still), and a table of the
// inbox's columns, with no index and the same statement-level notify
// trigger, takes the name jobs, so the store's COPY writes into it.
const inboxSwap = `ALTER TABLE {s}.jobs RENAME TO jobs_stored;
CREATE TABLE {s}.jobs (id bigint NOT NULL, shard integer NOT NULL, partition_key bigint, task text, payload json NOT NULL,
	priority smallint NOT NULL, max_attempts integer NOT NULL, retry_delay integer NOT NULL, metadata json, timeout_ms bigint,
	tags text[], queue text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TRIGGER jobs_notify AFTER INSERT ON {s}.jobs FOR EACH STATEMENT EXECUTE FUNCTION {s}.notify_jobs()`

// inboxMove moves up to 1,000 jobs from the inbox into the stored jobs
// table in one statement, set-based, as a claim would before it claims.
var inboxMove = `WITH m AS (DELETE FROM {s}.jobs WHERE ctid = ANY(ARRAY(SELECT ctid FROM {s}.jobs LIMIT 1000)) RETURNING ` + inboxCols + `)
INSERT INTO {s}.jobs_stored (` + inboxCols + `) SELECT ` + inboxCols + ` FROM m`

// pgBulkInbox measures the ceiling of an untried design (issue 35): an
// append-only inbox that the enqueue COPYs into and that claims move into
// jobs, set-based. The store is not changed: its jobs table is swapped
// for an index-less inbox (inboxSwap) under a client like the measured
// one, so the enqueue does on the client exactly what EnqueueMany does
// (the payloads encoded, the store's own COPY rows, the ids taken and
// returned) and the server writes the inbox's rows and nothing else. The
// move is then measured on its own: every job moved into the stored
// table 1,000 per statement, and the inbox vacuumed of the deleted rows,
// so that enqueue plus move can be set against today's CPU per job. The
// move here has the inbox to itself; a real one would have to lock out
// concurrent moves and keep first-in first-out order across them.
func (b *bench) pgBulkInbox(ctx context.Context, label string, n int, today cpuPair, copyRate float64, copyCPU cpuPair) (float64, error) {
	is, drop := b.pg.schema("bulkinbox")
	defer drop()
	c, err := b.pgBulkClient(ctx, is)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	sub := strings.NewReplacer("{s}", is)
	if _, err := b.pg.admin.Exec(ctx, sub.Replace(inboxSwap)); err != nil {
		return 0, err
	}
	m := b.pg.startCPU(ctx, pgApp())
	inRate, ids, err := pgBulkEnqueue(ctx, c, n)
	if err != nil {
		return 0, err
	}
	var inCPU cpuPair
	inCPU.Client, inCPU.Server = m.stop(ctx, n)
	checkIDs(b.rep, label, ids)

	app := pgApp() + "-move"
	dsn, err := withAppName(b.o.dsn, app)
	if err != nil {
		return 0, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	m = b.pg.startCPU(ctx, app)
	moved := 0
	for {
		tag, err := conn.Exec(ctx, sub.Replace(inboxMove))
		if err != nil {
			return 0, fmt.Errorf("move: %w", err)
		}
		if tag.RowsAffected() == 0 {
			break
		}
		moved += int(tag.RowsAffected())
	}
	if _, err := conn.Exec(ctx, "VACUUM "+is+".jobs"); err != nil {
		return 0, err
	}
	var moveCPU cpuPair
	moveCPU.Client, moveCPU.Server = m.stop(ctx, n)

	// The cheapest move there could be: the inbox filled again, then all
	// of it moved by one statement and emptied by TRUNCATE (no deletes to
	// write or vacuum; a real inbox would rotate tables for this, since
	// TRUNCATE locks out the enqueues).
	if _, _, err := pgBulkEnqueue(ctx, c, n); err != nil {
		return 0, err
	}
	m = b.pg.startCPU(ctx, app)
	tag, err := conn.Exec(ctx, sub.Replace(`INSERT INTO {s}.jobs_stored (`+inboxCols+`) SELECT `+inboxCols+` FROM {s}.jobs`))
	if err != nil {
		return 0, fmt.Errorf("move: %w", err)
	}
	moved += int(tag.RowsAffected())
	if _, err := conn.Exec(ctx, "TRUNCATE "+is+".jobs"); err != nil {
		return 0, err
	}
	var bulkMoveCPU cpuPair
	bulkMoveCPU.Client, bulkMoveCPU.Server = m.stop(ctx, n)

	var stored int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+is+".jobs_stored WHERE status = 'pending'").Scan(&stored); err != nil {
		return 0, err
	}
	if moved != 2*n || stored != 2*n {
		b.rep.fail("%s: inbox: %d jobs moved, %d stored, of %d", label, moved, stored, 2*n)
	}

	b.rep.add(label, "inbox ceiling: EnqueueMany's client work, COPY into an index-less inbox", inRate, "jobs/s").
		note("%s", cpuNote(inCPU, copyCPU, b.pg.local))
	b.rep.add(label, "inbox ceiling ÷ the one-column COPY", inRate/copyRate, "×")
	b.addCPU(label, "inbox ceiling", inCPU, copyCPU)
	if b.pg.local {
		b.rep.add(label, "inbox move (1,000 a statement, then VACUUM): server CPU per job", us(moveCPU.Server), "µs")
		b.rep.add(label, "CPU per job, client + server: EnqueueMany today", us(today.Client+today.Server), "µs")
		b.rep.add(label, "CPU per job, client + server: inbox enqueue + move", us(inCPU.Client+inCPU.Server+moveCPU.Client+moveCPU.Server), "µs")
		b.rep.add(label, "inbox move, all at once, then TRUNCATE: server CPU per job", us(bulkMoveCPU.Server), "µs")
		b.rep.add(label, "CPU per job, client + server: inbox enqueue + that move", us(inCPU.Client+inCPU.Server+bulkMoveCPU.Client+bulkMoveCPU.Server), "µs")
	}
	return inRate, nil
}

// A bulkPart is one table the parts measurement copies the jobs into.
type bulkPart struct {
	name string
	// create makes table {t} from the live jobs table {j}; empty: the
	// ids alone.
	create []string
	// ids: the rows carry ids taken from a sequence (a round trip
	// before each COPY); cols: the columns COPY writes.
	ids  bool
	cols []string
}

// The columns the store's COPY writes (copyCols in pgstore/copy.go).
var bulkJobCols = []string{"id", "shard", "partition_key", "task", "payload", "priority", "max_attempts", "retry_delay", "metadata", "timeout_ms", "tags", "queue"}

// bulkParts are what a batch of jobs costs the server, part by part: the
// one-column floor, the ids, then the jobs row with more and more of the
// live table's indexes, and two narrower tables that designs could
// write instead (the 12 columns COPY sends, with and without a primary
// key: a row that carries a job and nothing else, and an append-only
// inbox).
var bulkParts = []bulkPart{
	{name: "one-column jsonb table (the floor)", create: []string{`CREATE TABLE {t} (payload jsonb NOT NULL)`}, cols: []string{"payload"}},
	{name: "taking the ids alone (nextval, one round trip)", ids: true},
	{name: "jobs row and its primary key", create: []string{`CREATE TABLE {t} (LIKE {j} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, `ALTER TABLE {t} ADD PRIMARY KEY (id)`}, ids: true, cols: bulkJobCols},
	{name: "+ jobs_claim", create: []string{`CREATE TABLE {t} (LIKE {j} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, `ALTER TABLE {t} ADD PRIMARY KEY (id)`,
		`CREATE INDEX ON {t} (priority DESC, id) WHERE status = 'pending'`}, ids: true, cols: bulkJobCols},
	{name: "+ jobs_claim_queue", create: []string{`CREATE TABLE {t} (LIKE {j} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, `ALTER TABLE {t} ADD PRIMARY KEY (id)`,
		`CREATE INDEX ON {t} (priority DESC, id) WHERE status = 'pending'`, `CREATE INDEX ON {t} (queue, priority DESC, id) WHERE status = 'pending'`}, ids: true, cols: bulkJobCols},
	{name: "jobs as stored (+ the 7 other partial indexes' predicates)", create: []string{`CREATE TABLE {t} (LIKE {j} INCLUDING ALL)`}, ids: true, cols: bulkJobCols},
	{name: "narrow: the 12 columns COPY sends, primary key", create: []string{`CREATE TABLE {t} (id bigint PRIMARY KEY, shard integer NOT NULL, partition_key bigint, task text, payload json NOT NULL,
		priority smallint NOT NULL, max_attempts integer NOT NULL, retry_delay integer NOT NULL, metadata json, timeout_ms bigint, tags text[], queue text NOT NULL)`}, ids: true, cols: bulkJobCols},
	{name: "inbox: the same 12 columns, no index", create: []string{`CREATE TABLE {t} (id bigint NOT NULL, shard integer NOT NULL, partition_key bigint, task text, payload json NOT NULL,
		priority smallint NOT NULL, max_attempts integer NOT NULL, retry_delay integer NOT NULL, metadata json, timeout_ms bigint, tags text[], queue text NOT NULL)`}, ids: true, cols: bulkJobCols},
}

// pgBulkParts measures what a batch of 1,000 jobs costs the server, part
// by part (bulkParts): the same payloads COPYed 1,000 rows a call into
// tables made like the live jobs table of schema qs, on one connection,
// with the server CPU of its backend (and the server's shared
// processes) and the WAL written per row. pgx encodes the rows (not the
// store's own encoder), so the rates compare the tables, not the stores.
func (b *bench) pgBulkParts(ctx context.Context, qs string, payloads [][]byte) error {
	if !b.pg.local {
		return nil // server CPU is what this measures
	}
	app := pgApp() + "-parts"
	dsn, err := withAppName(b.o.dsn, app)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	schema, drop := b.pg.schema("bulkparts")
	defer drop()
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE SCHEMA %[1]s; CREATE SEQUENCE %[1]s.ids`, schema)); err != nil {
		return err
	}
	n := len(payloads)
	label := fmt.Sprintf("pg bulk parts, %d rows", n)
	var floor float64
	for i, part := range bulkParts {
		table := fmt.Sprintf("%s.t%d", schema, i)
		for _, stmt := range part.create {
			stmt = strings.NewReplacer("{t}", table, "{j}", qs+".jobs").Replace(stmt)
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", part.name, err)
			}
		}
		var wal0, wal1 int64
		lsn := `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`
		if err := conn.QueryRow(ctx, lsn).Scan(&wal0); err != nil {
			return err
		}
		m := b.pg.startCPU(ctx, app)
		start := time.Now()
		for done := 0; done < n; done += 1000 {
			k := min(1000, n-done)
			var seqs []int64
			if part.ids {
				if err := conn.QueryRow(ctx, `SELECT array_agg(nextval('`+schema+`.ids')) FROM generate_series(1, $1)`, k).Scan(&seqs); err != nil {
					return err
				}
			}
			if part.cols == nil {
				continue
			}
			rows := make([][]any, k)
			for r := range rows {
				p := payloads[done+r]
				if part.ids {
					rows[r] = []any{seqs[r], int32(0), nil, taskNoop, string(p), int16(0), int32(3), int32(60000), nil, nil, nil, "default"}
				} else {
					rows[r] = []any{p}
				}
			}
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{schema, fmt.Sprintf("t%d", i)}, part.cols, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("%s: %w", part.name, err)
			}
		}
		el := time.Since(start)
		_, server := m.stop(ctx, n)
		if err := conn.QueryRow(ctx, lsn).Scan(&wal1); err != nil {
			return err
		}
		r := rate(n, el)
		if i == 0 {
			floor = r
		}
		b.rep.add(label, part.name, r, "rows/s").
			note("server CPU per row %.2fµs, WAL per row %d B, %.2f× the floor's rate", float64(server)/float64(time.Microsecond), (wal1-wal0)/int64(n), r/floor)
	}
	return nil
}
