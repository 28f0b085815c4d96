package pgfaults_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// failoverCase is one failover: the replication mode, the lag of an
// asynchronous standby's link, and how long after the primary's stop the
// standby is promoted.
type failoverCase struct {
	name    string
	sync    bool
	lag     time.Duration
	promote time.Duration
}

// failoverJobs is how many jobs each failover runs: QMFAULTS_FAILOVER_JOBS,
// else 10,000; 4,000 under the race detector (the four failovers then
// stay well under two minutes on a loaded two-core machine; make test
// reruns them at full size without it) and 2,000 with -short.
func failoverJobs() int {
	if v, err := strconv.Atoi(os.Getenv("QMFAULTS_FAILOVER_JOBS")); err == nil && v > 0 {
		return v
	}
	switch {
	case testing.Short():
		return 2000
	case raceEnabled:
		return 4000
	}
	return 10000
}

// A primary and a streaming standby; three worker processes and a
// producer on a multi-host DSN (target_session_attrs=read-write). Mid-run
// the primary stops at once (-m immediate: a dying host) and the standby
// is promoted, at once or 20 s later. The processes are never restarted.
//
// Synchronous replication: no job whose enqueue returned success is
// lost, every job completes, no attempt runs twice, no completion is
// recorded twice, and periodic slots are missed only during the outage.
// Asynchronous replication with a link 100 ms behind (so that the last
// commits never reach the standby): the loss is measured and logged
// (FAILOVER lines), the lost enqueues are enqueued again, as their
// callers would, and the store completes everything with its bookkeeping
// consistent. In every case the workers complete jobs again within 10 s
// of the promotion, and each logs a bounded number of lines during the
// outage.
func TestFailover(t *testing.T) {
	t.Parallel()
	for _, c := range []failoverCase{
		{name: "sync/promote_at_once", sync: true},
		{name: "sync/promote_after_20s", sync: true, promote: 20 * time.Second},
		{name: "async/promote_at_once", lag: 100 * time.Millisecond},
		{name: "async/promote_after_20s", lag: 100 * time.Millisecond, promote: 20 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runFailover(t, c)
		})
	}
}

func runFailover(t *testing.T, c failoverCase) {
	n := failoverJobs()
	primary := pgtest.NewCluster(t)
	var standby *pgtest.Cluster
	cut := func() {}
	if c.sync {
		standby = pgtest.NewStandby(t, primary)
		primary.Exec(`ALTER SYSTEM SET synchronous_standby_names = '*'`)
		primary.Exec(`SELECT pg_reload_conf()`)
		waitReplication(t, primary.DSN, "sync")
	} else {
		lag := newLagProxy(t, fmt.Sprintf("127.0.0.1:%d", primary.Port), c.lag)
		standby = pgtest.NewStandby(t, primary, fmt.Sprintf("primary_conninfo='host=127.0.0.1 port=%d user=postgres'", lag.Port()))
		waitReplication(t, primary.DSN, "async")
		cut = lag.Cut
	}
	// Both hosts, the writable one chosen at each connect (pgx's
	// multi-host URL; docs/postgres.md).
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=5",
		primary.Port, standby.Port)
	const schema = "qm_failover"
	ctx := t.Context()
	prod, err := openClient(ctx, dsn, schema, queuemax.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var ws []*worker
	for range 3 {
		ws = append(ws, startWorker(t, dsn, schema, 8*time.Second, envTick+"=1s", envLog+"=info"))
	}
	caughtUp(t, primary.DSN) // the schema is on the standby: the lag is of the jobs

	// The producer: four goroutines enqueue one job at a time, a fifth in
	// batches of 50. A failed enqueue is tried again, as its caller
	// would; one whose outcome is unknown is checked from outside after
	// the failover. acked holds when each job's enqueue returned success.
	var (
		sent      atomic.Int64
		mu        sync.Mutex
		acked     = make(map[int]bool)
		uncertain []int
		failures  int
		wg        sync.WaitGroup
	)
	enqueue := func(ks []int) {
		for {
			ps := make([]queuemax.EnqueueParams, len(ks))
			for i, k := range ks {
				ps[i] = queuemax.EnqueueParams{Task: "t.Job", Payload: args{N: k}}
			}
			var err error
			if len(ps) == 1 {
				_, err = prod.Enqueue(ctx, "t.Job", args{N: ks[0]}, queuemax.Opts{})
			} else {
				_, err = prod.EnqueueMany(ctx, ps)
			}
			mu.Lock()
			switch {
			case err == nil:
				for _, k := range ks {
					acked[k] = true
				}
			case errors.Is(err, queuemaxpg.ErrCommitUnknown):
				uncertain = append(uncertain, ks...)
			default:
				failures++
				t.Logf("enqueue %d jobs failed (tried again): %v", len(ks), err)
			}
			mu.Unlock()
			if err == nil || errors.Is(err, queuemaxpg.ErrCommitUnknown) || ctx.Err() != nil {
				break
			}
		}
		sent.Add(int64(len(ks)))
	}
	for g := range 5 {
		wg.Go(func() {
			if g < 4 {
				for k := g; k < n/2; k += 4 {
					enqueue([]int{k})
				}
				return
			}
			for k := n / 2; k < n; k += 50 {
				ks := make([]int, 0, 50)
				for i := k; i < min(k+50, n); i++ {
					ks = append(ks, i)
				}
				enqueue(ks)
			}
		})
	}

	// The failover, half-way through.
	for sent.Load() < int64(n/2) && !t.Failed() {
		time.Sleep(5 * time.Millisecond)
	}
	logged := func() (sum int) {
		for _, w := range ws {
			sum += w.log.Lines()
		}
		return sum
	}
	// Unique jobs enqueued right before the crash (a task no worker
	// runs, so they stay pending): after the failover the same keys are
	// enqueued again, and each key must then be held by exactly one job.
	uniq := func() ([]queuemax.EnqueueResult, error) {
		ps := make([]queuemax.EnqueueParams, failoverUnique)
		for i := range ps {
			ps[i] = queuemax.EnqueueParams{Task: "t.Uniq", Payload: args{N: i},
				Opts: queuemax.Opts{UniqueKey: "u" + strconv.Itoa(i), Unique: &queuemax.UniqueOpts{ByKey: true}}}
		}
		return prod.EnqueueManyResults(ctx, ps)
	}
	if _, err := uniq(); err != nil {
		t.Fatalf("unique jobs: %v", err)
	}
	linesBefore := logged()
	replicationLag(t, primary.DSN)
	stopped := time.Now()
	cut() // the link goes with the host: WAL still on its way is lost
	primary.Stop("immediate")
	atStop := sent.Load()
	time.Sleep(c.promote) // the outage's length (zero: promoted at once)
	promoting := time.Now()
	standby.Promote()
	promoted := time.Now()

	conn, err := pgx.Connect(ctx, standby.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	jobsTable := pgx.Identifier{schema, "jobs"}.Sanitize()
	completed := func() int {
		var done int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+jobsTable+` WHERE task = 't.Job' AND status = 'completed'`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		return done
	}
	// Workers resume: a completion committed after the promotion.
	base := completed()
	for completed() == base {
		if time.Since(promoted) > 30*time.Second {
			t.Fatalf("no job completed within 30 s of the promotion")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resumed := time.Since(promoted)
	linesOutage := logged() - linesBefore

	// What survived of the enqueues acknowledged so far: every one of
	// them committed before this read starts, on the old primary or
	// the new one.
	mu.Lock()
	var ackedBefore []int
	for k := range acked {
		ackedBefore = append(ackedBefore, k)
	}
	mu.Unlock()
	stored := make(map[int]bool)
	rows, err := conn.Query(ctx, `SELECT (payload->>'n')::int FROM `+jobsTable+` WHERE task = 't.Job'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k int
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		stored[k] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var lost []int
	for _, k := range ackedBefore {
		if !stored[k] {
			lost = append(lost, k)
		}
	}
	if c.sync && len(lost) > 0 {
		t.Errorf("%d of %d acknowledged enqueues lost with synchronous replication, e.g. job %d", len(lost), len(ackedBefore), lost[0])
	}

	wg.Wait()
	// Unknown outcomes and (asynchronous) lost enqueues are enqueued
	// again where the job is missing, as docs/postgres.md says.
	again := 0
	for _, k := range append(uncertain, lost...) {
		var have int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+jobsTable+` WHERE task = 't.Job' AND (payload->>'n')::int = $1`, k).Scan(&have); err != nil {
			t.Fatal(err)
		}
		if have == 0 {
			again++
			if _, err := prod.Enqueue(ctx, "t.Job", args{N: k}, queuemax.Opts{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDone(t, conn, schema, n, 3*time.Minute)
	var uniqSurvived int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+jobsTable+` WHERE task = 't.Uniq'`).Scan(&uniqSurvived); err != nil {
		t.Fatal(err)
	}
	res, err := uniq()
	if err != nil {
		t.Fatalf("unique jobs again: %v", err)
	}
	dups := 0
	for _, r := range res {
		if r.Duplicate {
			dups++
		}
	}
	var uniqRows, uniqKeys int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT unique_key) FROM `+jobsTable+` WHERE task = 't.Uniq'`).Scan(&uniqRows, &uniqKeys); err != nil {
		t.Fatal(err)
	}
	if uniqRows != failoverUnique || uniqKeys != failoverUnique || dups != uniqSurvived {
		t.Errorf("unique jobs after the failover: %d rows for %d keys (want %d each); %d duplicates for %d that survived",
			uniqRows, uniqKeys, failoverUnique, dups, uniqSurvived)
	}
	waitListening(t, conn, 4) // the producer and the three workers, on the new primary

	var processed, fenced int64
	for _, w := range ws {
		p, l := w.stop(t)
		processed += p
		fenced += l
	}
	ex := executions(t, ws)
	var reruns, twice, rerunLost int
	var ticks int64 // the periodic task's completions, in processed too
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+jobsTable+` WHERE task = 't.Tick' AND status = 'completed'`).Scan(&ticks); err != nil {
		t.Fatal(err)
	}
	if c.sync {
		reruns, _ = verdict(t, conn, schema, n, ex)
		// A completion is recorded once: the processed counters, bumped
		// by the acknowledging statement, count n. Workers may see fewer
		// succeed: an acknowledgement committed (and replicated) whose
		// answer the dying primary never sent is refused by the fence
		// when retried on the new one (counted as fenced).
		var recorded int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(processed), 0) FROM `+pgx.Identifier{schema, "counters"}.Sanitize()).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if recorded != int64(n)+ticks {
			t.Errorf("%d completions recorded for %d jobs and %d periodic ones: a completion was recorded twice or lost", recorded, n, ticks)
		}
		// Workers may see fewer still when the outage outlasts an
		// acknowledgement's retries (about 10 s): one the old primary
		// committed and replicated but never answered gives up, counted
		// neither way, while its completion stands (recorded above). So
		// the lower bound holds only when the standby is promoted at once.
		if processed > int64(n)+ticks || c.promote == 0 && processed+fenced < int64(n) {
			t.Errorf("workers acknowledged %d completions and had %d refused, for %d jobs", processed, fenced, n)
		} else if processed+fenced < int64(n) {
			t.Logf("workers acknowledged %d completions and had %d refused, for %d jobs: %d gave up while the server was down, their completions recorded once",
				processed, fenced, n, int64(n)-processed-fenced)
		}
		checkSlots(t, conn, schema, stopped, promoted)
	} else {
		// Undone work: executions beyond one per job, of which those of
		// an attempt already run (a claim that was undone); and
		// completions acknowledged beyond one per job (undone ones).
		isLost := make(map[int]bool)
		for _, k := range lost {
			isLost[k] = true
		}
		for k := range n {
			if isLost[k] {
				rerunLost += max(len(ex[k])-1, 0) // ran, lost with its enqueue, enqueued again
				continue
			}
			seen := make(map[int]bool)
			for i, r := range ex[k] {
				if i > 0 {
					reruns++
				}
				if seen[r.attempt] {
					twice++
				}
				seen[r.attempt] = true
			}
		}
		checkConsistent(t, conn, schema, n)
	}
	for i, w := range ws {
		if l := w.log.Lines(); l > 0 {
			t.Logf("worker %d logged %d lines in all", i, l)
		}
	}
	if linesOutage > 3*outageLines {
		t.Errorf("the workers logged %d lines from the stop until completions resumed, want at most %d each", linesOutage, outageLines)
	}
	t.Logf("FAILOVER %s: %d jobs; stop at %d enqueued; promotion took %v, %v after the stop; completions resumed %v after it; "+
		"acknowledged enqueues lost %d of %d; enqueues retried by the producer %d, outcome unknown %d, enqueued again %d; "+
		"re-runs of lost jobs %d, of others %d (of an attempt already run: %d); completions acknowledged %d for %d jobs (undone: %d); fenced %d; "+
		"log lines during the outage %d (3 workers); unique jobs enqueued just before the crash surviving %d of %d",
		c.name, n, atStop, promoted.Sub(promoting).Round(time.Millisecond), promoting.Sub(stopped).Round(time.Millisecond),
		resumed.Round(time.Millisecond), len(lost), len(ackedBefore), failures, len(uncertain), again, rerunLost, reruns, twice,
		processed-ticks, n, max(processed-ticks-int64(n), 0), fenced, linesOutage, uniqSurvived, failoverUnique)
	if resumed > 10*time.Second {
		t.Errorf("completions resumed %v after the promotion, want within 10 s", resumed)
	}
}

// failoverUnique is how many unique jobs the producer enqueues right
// before the crash.
const failoverUnique = 200

// outageLines bounds what one worker process logs during an outage: a
// failure and a recovery line for each of its services (claims,
// heartbeats, completions, orphan recovery, the periodic scheduler, …),
// never one per job or heartbeat.
const outageLines = 20

// waitReplication waits until primary streams to a standby in mode
// ("sync" or "async").
func waitReplication(t *testing.T, dsn, mode string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var state string
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT coalesce(max(sync_state), '') FROM pg_stat_replication WHERE state = 'streaming'`).Scan(&state)
			conn.Close(context.Background())
		}
		cancel()
		if state == mode {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s standby streaming after a minute (%q, %v)", mode, state, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitListening waits until want sessions LISTEN on the server.
func waitListening(t *testing.T, conn *pgx.Conn, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var listening int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'`).Scan(&listening); err != nil {
			t.Fatal(err)
		}
		if listening == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions listening on the new primary, want %d", listening, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkSlots checks the periodic task's slots: none fired twice (one
// job per slot), and consecutive seconds except for a gap within the
// outage (from a second before the stop to 10 s after the promotion).
func checkSlots(t *testing.T, conn *pgx.Conn, schema string, stopped, promoted time.Time) {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT slot FROM `+pgx.Identifier{schema, "periodic_runs"}.Sanitize()+
		` WHERE task = 't.Tick' ORDER BY slot`)
	if err != nil {
		t.Fatal(err)
	}
	slots, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		t.Fatal(err)
	}
	var jobs int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()+
		` WHERE task = 't.Tick'`).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != len(slots) {
		t.Errorf("%d periodic jobs for %d slots: a slot fired twice or its job is missing", jobs, len(slots))
	}
	if len(slots) < 2 {
		t.Fatalf("%d periodic slots fired", len(slots))
	}
	for i := 1; i < len(slots); i++ {
		a, b := slots[i-1], slots[i]
		if b.Sub(a) == time.Second {
			continue
		}
		if a.Before(stopped.Add(-2*time.Second)) || b.After(promoted.Add(10*time.Second)) {
			t.Errorf("slots %v and %v are %v apart, outside the outage (%v to %v)", a, b, b.Sub(a), stopped, promoted)
		}
	}
}

// checkConsistent checks what an asynchronous failover left behind: every
// job stored once and completed (verdict's first checks, without its
// per-attempt ones, which an undone claim breaks), no dead letters, and
// no job held or claimed by nobody.
func checkConsistent(t *testing.T, conn *pgx.Conn, schema string, n int) {
	t.Helper()
	var copies, stray, dead int
	jobs := pgx.Identifier{schema, "jobs"}.Sanitize()
	if err := conn.QueryRow(t.Context(), `SELECT count(*) - count(DISTINCT payload->>'n') FROM `+jobs+` WHERE task = 't.Job'`).Scan(&copies); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM `+jobs+` WHERE status NOT IN ('completed', 'pending')`).Scan(&stray); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "dead_letters"}.Sanitize()).Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if copies != 0 || dead != 0 {
		t.Errorf("after the failover: %d jobs stored twice, %d dead letters; want none", copies, dead)
	}
	if stray != 0 {
		t.Errorf("%d jobs neither completed nor pending once every worker stopped", stray)
	}
}

// caughtUp waits until the standby has flushed all the WAL the primary
// had written when it was called.
func caughtUp(t *testing.T, dsn string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var target string
	if err := conn.QueryRow(t.Context(), `SELECT pg_current_wal_lsn()::text`).Scan(&target); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var done bool
		if err := conn.QueryRow(t.Context(), `SELECT coalesce(bool_and(flush_lsn >= $1::pg_lsn), false) FROM pg_stat_replication`, target).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby has not flushed the primary's WAL up to %s after a minute", target)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// replicationLag logs how far behind the standby is.
func replicationLag(t *testing.T, dsn string) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Logf("replication lag: %v", err)
		return
	}
	defer conn.Close(context.Background())
	var behind int64
	err = conn.QueryRow(ctx, `SELECT coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)), -1)::bigint FROM pg_stat_replication`).Scan(&behind)
	t.Logf("at the stop the standby had not flushed %d bytes of the primary's WAL (%v)", behind, err)
}
