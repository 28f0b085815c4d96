package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// pgScenarioNames lists the PostgreSQL scenarios (-store postgres) in the
// order they run.
var pgScenarioNames = []string{"floor", "processing", "enqueue", "bulk", "failure", "depth", "latency", "procs", "idle", "limits", "workflow", "steps"}

// PostgreSQL scenario sizes, before -scale.
const (
	pgProcessJobs    = 50000
	pgSingleJobs     = 20000  // one Enqueue call at a time, one goroutine
	pgConcurrentJobs = 50000  // pgProducers goroutines, one call at a time
	pgBatchJobs      = 200000 // EnqueueMany, 1,000 per call
	pgLatencySamples = 4000   // at latencyRate jobs/s
	pgProducers      = 16
	pgManyWorkers    = 100
	// pgFloorClaimers is how many goroutines drain the floor table, each
	// claiming 100 rows per statement. More would only queue on the same
	// two cores; fewer leaves the server idle during round trips.
	pgFloorClaimers = 4
)

// pgApp is the application_name of the connections whose server CPU is
// counted: the clients the scenarios open (the producer process of the
// latency scenario included). The floor and the bench's own bookkeeping
// connection use other names.
func pgApp() string { return fmt.Sprintf("queuemax-bench-%d", os.Getpid()) }

// withAppName returns dsn (a postgres:// URL) with application_name set.
func withAppName(dsn, app string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("-dsn %q: want a postgres:// URL", dsn)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pgEnv is a run's connection to the PostgreSQL server: the bench's
// bookkeeping pool (schemas, server CPU) and the server's description.
type pgEnv struct {
	dsn     string // what the clients get, application_name pgApp()
	floor   string // what the floor uses, its own application_name
	admin   *pgxpool.Pool
	version string
	local   bool // the server's processes are readable in /proc
}

func (b *bench) pgConnect(ctx context.Context) error {
	dsn, err := withAppName(b.o.dsn, pgApp())
	if err != nil {
		return err
	}
	floor, err := withAppName(b.o.dsn, pgApp()+"-floor")
	if err != nil {
		return err
	}
	adminDSN, err := withAppName(b.o.dsn, "queuemax-bench-admin")
	if err != nil {
		return err
	}
	admin, err := pgxpool.New(ctx, adminDSN)
	if err != nil {
		return err
	}
	e := &pgEnv{dsn: dsn, floor: floor, admin: admin}
	var sync string
	if err := admin.QueryRow(ctx, "SELECT version(), current_setting('synchronous_commit')").Scan(&e.version, &sync); err != nil {
		admin.Close()
		return fmt.Errorf("PostgreSQL at %s: %w", b.o.dsn, err)
	}
	if f := strings.Fields(e.version); len(f) >= 2 {
		e.version = f[0] + " " + f[1]
	}
	e.version += ", synchronous_commit=" + sync
	if pids, err := e.serverPIDs(ctx, "queuemax-bench-admin"); err == nil && len(pids) > 0 {
		_, err := procTicks(pids[0])
		e.local = err == nil
	}
	b.pg = e
	b.rep.Store = "postgres"
	b.rep.Server = e.version
	return nil
}

func (e *pgEnv) close() { e.admin.Close() }

// schema returns a fresh schema name and the cleanup that drops it.
func (e *pgEnv) schema(name string) (string, func()) {
	s := fmt.Sprintf("qmbench_%s_%d_%d", name, os.Getpid(), rand.Uint32())
	return s, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+s+" CASCADE")
	}
}

// serverPIDs returns the server processes whose CPU counts for app's
// work: its backends, and the background processes that flush its WAL
// and pages and vacuum its tables.
func (e *pgEnv) serverPIDs(ctx context.Context, app string) ([]int, error) {
	rows, err := e.admin.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE application_name = $1
		   OR backend_type IN ('walwriter', 'checkpointer', 'background writer', 'autovacuum worker')`, app)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// procTicks returns utime+stime of pid from /proc/<pid>/stat.
func procTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat times")
	}
	return u + st, nil
}

// cpuMeter measures the CPU time of this process and of the server
// processes serving app between start and stop.
type cpuMeter struct {
	e       *pgEnv
	app     string
	client0 time.Duration
	server0 map[int]int64
}

func (e *pgEnv) startCPU(ctx context.Context, app string) *cpuMeter {
	m := &cpuMeter{e: e, app: app, client0: cpuTime(), server0: map[int]int64{}}
	if e.local {
		pids, _ := e.serverPIDs(ctx, app)
		for _, pid := range pids {
			if t, err := procTicks(pid); err == nil {
				m.server0[pid] = t
			}
		}
	}
	return m
}

// stop returns the CPU time per job of the client and of the server
// (zero when the server's processes are not readable here). Call it
// before the connections close: an exited backend's time is gone.
func (m *cpuMeter) stop(ctx context.Context, jobs int) (client, server time.Duration) {
	client = (cpuTime() - m.client0) / time.Duration(max(jobs, 1))
	if !m.e.local {
		return client, 0
	}
	pids, _ := m.e.serverPIDs(ctx, m.app)
	var ticks int64
	for _, pid := range pids {
		if t, err := procTicks(pid); err == nil {
			ticks += t - m.server0[pid]
		}
	}
	return client, time.Duration(ticks) * clockTick / time.Duration(max(jobs, 1))
}

// pgFloorResult is what the PostgreSQL server itself does: the minimal SQL
// per job, with nothing of queuemax around it.
type pgFloorResult struct {
	// Insert1 is rows/s of one INSERT per call (autocommit) from one
	// goroutine; Insert16 the same from pgProducers goroutines.
	Insert1, Insert16 float64
	// InsertBatch is rows/s of one INSERT … SELECT unnest of 1,000 rows
	// per call, one goroutine; InsertCopy the same with one COPY (pgx
	// CopyFrom) of 1,000 rows per call, the fastest way in.
	InsertBatch, InsertCopy float64
	// Process is jobs/s claiming 100 rows per UPDATE … FOR UPDATE SKIP
	// LOCKED … RETURNING and deleting them with one DELETE … id = ANY,
	// pgFloorClaimers goroutines, until the table is empty.
	Process float64
	// CPU per job of each phase, this process and the server.
	Insert1CPU, Insert16CPU, BatchCPU, CopyCPU, ProcessCPU cpuPair
	Processed                                              int
	// ProcessSmall is Process with claims of SmallBatch rows (zero if not
	// measured): the most a claim takes without prefetch (Config.ClaimBatch =
	// Workers).
	SmallBatch   int
	ProcessSmall float64
}

// cpuPair is CPU time per job of the client and of the server.
type cpuPair struct{ Client, Server time.Duration }

// The floor's table: what any queue row needs, one partial index for the
// claim order.
const (
	pgFloorSchema = `CREATE SCHEMA %[1]s;
CREATE TABLE %[1]s.jobs (
	id bigserial PRIMARY KEY,
	task text NOT NULL,
	payload jsonb NOT NULL,
	status smallint NOT NULL DEFAULT 0,
	priority smallint NOT NULL DEFAULT 0,
	attempts int NOT NULL DEFAULT 0,
	max_attempts int NOT NULL DEFAULT 4,
	run_at timestamptz NOT NULL DEFAULT now(),
	created_at timestamptz NOT NULL DEFAULT now(),
	worker_id text,
	lease bigint,
	heartbeat timestamptz);
CREATE INDEX ON %[1]s.jobs (priority DESC, id) WHERE status = 0;`
	pgFloorInsert = `INSERT INTO %s.jobs (task, payload) VALUES ($1, $2)`
	pgFloorBatch  = `INSERT INTO %s.jobs (task, payload) SELECT $1, unnest($2::jsonb[])`
	pgFloorClaim  = `UPDATE %[1]s.jobs SET status = 1, attempts = attempts + 1, worker_id = $1, lease = $2, heartbeat = now()
	WHERE id IN (SELECT id FROM %[1]s.jobs WHERE status = 0 AND run_at <= now()
		ORDER BY priority DESC, id LIMIT $3 FOR UPDATE SKIP LOCKED)
	RETURNING id, task, payload, attempts`
	pgFloorDelete = `DELETE FROM %s.jobs WHERE id = ANY($1)`
)

// pgFloor measures the floor on a fresh schema: single inserts, then
// concurrent single inserts, then batches, then copied batches (copied
// rows, 1,000 per COPY), then the processing of every
// row inserted; with smallBatch > 0, it then inserts batched rows again
// and processes them with claims of smallBatch rows.
func (b *bench) pgFloor(ctx context.Context, single, concurrent, batched, copied, smallBatch int) (pgFloorResult, error) {
	var res pgFloorResult
	e := b.pg
	schema, drop := e.schema("floor")
	defer drop()
	if _, err := e.admin.Exec(ctx, fmt.Sprintf(pgFloorSchema, schema)); err != nil {
		return res, fmt.Errorf("floor schema: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(e.floor)
	if err != nil {
		return res, err
	}
	cfg.MaxConns = int32(max(pgProducers, pgFloorClaimers))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	app := pgApp() + "-floor"
	ins := fmt.Sprintf(pgFloorInsert, schema)
	payload := func(n int) string { return fmt.Sprintf(`{"n":%d}`, n) }

	insertFrom := func(goroutines, n int) error {
		var wg sync.WaitGroup
		errs := make([]error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for i := g; i < n; i += goroutines {
					if _, err := pool.Exec(ctx, ins, taskNoop, payload(i)); err != nil {
						errs[g] = err
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	// Warm every connection (and its prepared statements) first.
	if err := insertFrom(int(cfg.MaxConns), int(cfg.MaxConns)); err != nil {
		return res, err
	}
	total := int(cfg.MaxConns)

	m := e.startCPU(ctx, app)
	start := time.Now()
	if err := insertFrom(1, single); err != nil {
		return res, err
	}
	res.Insert1 = rate(single, time.Since(start))
	res.Insert1CPU.Client, res.Insert1CPU.Server = m.stop(ctx, single)
	total += single

	if concurrent > 0 {
		m = e.startCPU(ctx, app)
		start = time.Now()
		if err := insertFrom(pgProducers, concurrent); err != nil {
			return res, err
		}
		res.Insert16 = rate(concurrent, time.Since(start))
		res.Insert16CPU.Client, res.Insert16CPU.Server = m.stop(ctx, concurrent)
		total += concurrent
	}

	batch := fmt.Sprintf(pgFloorBatch, schema)
	insertBatched := func(n int) error {
		for done := 0; done < n; {
			k := min(1000, n-done)
			ps := make([]string, k)
			for i := range ps {
				ps[i] = payload(done + i)
			}
			if _, err := pool.Exec(ctx, batch, taskNoop, ps); err != nil {
				return err
			}
			done += k
		}
		return nil
	}
	m = e.startCPU(ctx, app)
	start = time.Now()
	if err := insertBatched(batched); err != nil {
		return res, err
	}
	res.InsertBatch = rate(batched, time.Since(start))
	res.BatchCPU.Client, res.BatchCPU.Server = m.stop(ctx, batched)
	total += batched

	if copied > 0 {
		m = e.startCPU(ctx, app)
		start = time.Now()
		for done := 0; done < copied; {
			k := min(1000, copied-done)
			rows := make([][]any, k)
			for i := range rows {
				rows[i] = []any{taskNoop, payload(done + i)}
			}
			if _, err := pool.CopyFrom(ctx, pgx.Identifier{schema, "jobs"}, []string{"task", "payload"}, pgx.CopyFromRows(rows)); err != nil {
				return res, fmt.Errorf("floor COPY: %w", err)
			}
			done += k
		}
		res.InsertCopy = rate(copied, time.Since(start))
		res.CopyCPU.Client, res.CopyCPU.Server = m.stop(ctx, copied)
		total += copied
	}

	claim, del := fmt.Sprintf(pgFloorClaim, schema), fmt.Sprintf(pgFloorDelete, schema)
	// analyze gives the planner the table's statistics before a drain
	// (untimed). Without them, on a table filled since it was created, it
	// reads and sorts every pending row for each claim instead of walking
	// the index (16 ms for a claim of 100 out of 50,000, where the index
	// takes well under 1): the floor would pay the very cost queuemax's
	// claims avoid (pgstore's claim pool), and flatter every ratio.
	analyze := func() error {
		_, err := e.admin.Exec(ctx, "ANALYZE "+schema+".jobs")
		return err
	}
	// drain claims and deletes limit rows per statement with
	// pgFloorClaimers goroutines until the table is empty.
	drain := func(limit int) (int, error) {
		var (
			mu        sync.Mutex
			processed int
		)
		err := eachShard(pgFloorClaimers, func(int) error {
			n := 0
			defer func() { mu.Lock(); processed += n; mu.Unlock() }()
			ids := make([]int64, 0, limit)
			for {
				ids = ids[:0]
				rows, err := pool.Query(ctx, claim, "floor", rand.Int64(), limit)
				if err != nil {
					return err
				}
				for rows.Next() {
					var (
						id       int64
						task     string
						payload  []byte
						attempts int
					)
					if err := rows.Scan(&id, &task, &payload, &attempts); err != nil {
						rows.Close()
						return err
					}
					ids = append(ids, id)
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
				if len(ids) == 0 {
					return nil
				}
				if _, err := pool.Exec(ctx, del, ids); err != nil {
					return err
				}
				n += len(ids)
			}
		})
		return processed, err
	}
	if err := analyze(); err != nil {
		return res, err
	}
	m = e.startCPU(ctx, app)
	start = time.Now()
	processed, err := drain(100)
	if err != nil {
		return res, err
	}
	res.Process = rate(processed, time.Since(start))
	res.ProcessCPU.Client, res.ProcessCPU.Server = m.stop(ctx, processed)
	res.Processed = processed
	if processed != total {
		return res, fmt.Errorf("floor processed %d rows, want %d", processed, total)
	}
	if smallBatch > 0 {
		if err := insertBatched(batched); err != nil {
			return res, err
		}
		if err := analyze(); err != nil {
			return res, err
		}
		start = time.Now()
		processed, err := drain(smallBatch)
		if err != nil {
			return res, err
		}
		res.SmallBatch, res.ProcessSmall = smallBatch, rate(processed, time.Since(start))
		if processed != batched {
			return res, fmt.Errorf("floor processed %d rows, want %d", processed, batched)
		}
	}
	return res, nil
}

// openPG opens a client on a fresh schema; the returned cleanup closes it
// and drops the schema.
func (b *bench) openPG(ctx context.Context, name string, workers int, mod func(*queuemax.Config)) (*harness, string, func(), error) {
	schema, drop := b.pg.schema(name)
	st, err := queuemaxpg.Open(ctx, b.pg.dsn, queuemaxpg.Options{Schema: schema})
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	h, err := b.open(ctx, "", 0, workers, func(c *queuemax.Config) {
		c.Store = st
		if mod != nil {
			mod(c)
		}
	})
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	return h, schema, func() { h.c.Close(); drop() }, nil
}

// cpuNote formats CPU per job against the floor's.
func cpuNote(got, floor cpuPair, local bool) string {
	s := fmt.Sprintf("CPU per job: client %.1fµs (floor %.1fµs)", us(got.Client), us(floor.Client))
	if local {
		s += fmt.Sprintf(", server %.1fµs (floor %.1fµs)", us(got.Server), us(floor.Server))
	} else {
		s += ", server not measured (its processes are not on this machine)"
	}
	return s
}

// addCPU records the CPU per job of a figure as two rows next to the
// floor's.
func (b *bench) addCPU(label, what string, got, floor cpuPair) {
	b.rep.add(label, what+": client CPU per job", us(got.Client), "µs").vsFloor(us(floor.Client))
	if b.pg.local {
		b.rep.add(label, what+": server CPU per job", us(got.Server), "µs").vsFloor(us(floor.Server))
	}
}
