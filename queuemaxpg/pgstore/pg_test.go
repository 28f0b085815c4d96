package pgstore_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
	"github.com/queuemax/queuemax/runtime/store"
)

func job(now time.Time) store.InsertParams {
	return store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: now}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMigrationsConcurrent(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			st, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: schema, MaxConns: 3})
			if err == nil {
				_, err = st.Insert(t.Context(), []store.InsertParams{job(time.Now())})
				st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	st := open(t, pgstore.Options{DSN: dsn, Schema: schema})
	// Versions may have gaps (branches merged out of order are numbered
	// ahead), so the check is that no migration was applied twice.
	var versions, distinct int
	if err := st.Pool().QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM `+pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&versions, &distinct); err != nil {
		t.Fatal(err)
	}
	if versions != distinct {
		t.Errorf("schema_version rows = %d for %d versions, want one per migration", versions, distinct)
	}
	if jobs, _ := st.Jobs(t.Context(), store.ListParams{Shard: store.AllShards}); len(jobs) != n {
		t.Errorf("jobs = %d, want %d", len(jobs), n)
	}
}

func TestNewerSchemaIsAnError(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	st := open(t, pgstore.Options{DSN: dsn})
	if _, err := st.Pool().Exec(t.Context(), `INSERT INTO `+pgx.Identifier{st.Schema(), "schema_version"}.Sanitize()+
		` (version, name) VALUES (99, 'from the future')`); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: st.Schema(), ReadOnly: ro})
		if !errors.Is(err, pgstore.ErrSchemaNewer) || !strings.Contains(err.Error(), "version 99") {
			t.Errorf("Open(read-only %v) of a version-99 schema = %v, want ErrSchemaNewer naming version 99", ro, err)
		}
	}
}

func TestShardCountIsFixed(t *testing.T) {
	t.Parallel()
	st := open(t, pgstore.Options{Shards: 2})
	_, err := pgstore.Open(t.Context(), pgstore.Options{DSN: testDSN(t), Schema: st.Schema(), Shards: 3})
	if !errors.Is(err, store.ErrShardMismatch) {
		t.Errorf("reopen with 3 shards = %v, want ErrShardMismatch", err)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	st := open(t, pgstore.Options{DSN: dsn})
	if _, err := st.Insert(t.Context(), []store.InsertParams{job(time.Now())}); err != nil {
		t.Fatal(err)
	}
	ro := open(t, pgstore.Options{DSN: dsn, Schema: st.Schema(), ReadOnly: true})
	if _, err := ro.Insert(t.Context(), []store.InsertParams{job(time.Now())}); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("read-only Insert = %v, want ErrReadOnly", err)
	}
	if _, err := ro.Claim(t.Context(), store.ClaimParams{Max: 1}); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("read-only Claim = %v, want ErrReadOnly", err)
	}
	if jobs, err := ro.Jobs(t.Context(), store.ListParams{Shard: store.AllShards}); err != nil || len(jobs) != 1 {
		t.Errorf("read-only Jobs = %d, %v; want 1", len(jobs), err)
	}
	// The second fence: the sessions themselves refuse writes.
	tbl := pgx.Identifier{st.Schema(), "jobs"}.Sanitize()
	if _, err := ro.Pool().Exec(t.Context(), `DELETE FROM `+tbl); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("DELETE through the read-only store's pool = %v, want a read-only transaction error", err)
	}
	_, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: freshSchema(t, dsn), ReadOnly: true})
	if err == nil || !strings.Contains(err.Error(), "holds no queue") {
		t.Errorf("read-only Open of a missing schema = %v, want 'holds no queue'", err)
	}
}

// A host whose clock runs an hour ahead (or behind) must not recover other
// hosts' fresh jobs as orphans, nor run scheduled jobs early: with the
// database clock its Now only sets offsets.
func TestDatabaseClockIgnoresSkewedHosts(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	st := open(t, pgstore.Options{DSN: dsn})
	ctx := t.Context()
	real := time.Now()
	ahead, behind := real.Add(time.Hour), real.Add(-time.Hour)

	// A job claimed by a host with a correct clock, then a recovery run by
	// a host an hour ahead with a 30s stuck timeout.
	if _, err := st.Insert(ctx, []store.InsertParams{job(real)}); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "a", Max: 1, Now: real})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("Claim = %d, %v", len(claimed), err)
	}
	res, err := st.RecoverOrphans(ctx, ahead.Add(-30*time.Second), ahead)
	if err != nil || res != (store.RecoverResult{}) {
		t.Errorf("RecoverOrphans from a host an hour ahead = %+v, %v; want nothing recovered", res, err)
	}
	if j, _ := st.Job(ctx, claimed[0].ID); j.Status != store.StatusProcessing || time.Since(j.Heartbeat).Abs() > time.Minute {
		t.Errorf("claimed job = %s, heartbeat %v; want processing with the database's time", j.Status, j.Heartbeat)
	}

	// Jobs scheduled a minute out by hosts an hour off either way, and
	// a retry scheduled a minute out: none is claimable now, not even by a
	// host that believes it is two hours later.
	ids, err := st.Insert(ctx, []store.InsertParams{
		{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: ahead, RunAt: ahead.Add(time.Minute)},
		{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: behind, RunAt: behind.Add(time.Minute)},
	})
	if err != nil {
		t.Fatal(err)
	}
	errs := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: claimed[0].ID, Token: claimed[0].Lease}, Error: "x", ErrorType: "x",
		Now: behind, RetryAt: behind.Add(time.Minute)}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got, err := st.Claim(ctx, store.ClaimParams{WorkerID: "b", Max: 10, Now: real.Add(2 * time.Hour)}); err != nil || len(got) != 0 {
		t.Errorf("Claim by a host two hours ahead = %d jobs, %v; want none (all are due in a minute)", len(got), err)
	}
	for _, id := range append(ids, claimed[0].ID) {
		j, _ := st.Job(ctx, id)
		if d := j.NextRetryAt.Sub(time.Now()); j.Status != store.StatusScheduled || d < 30*time.Second || d > 90*time.Second {
			t.Errorf("job %d = %s due in %v, want scheduled about a minute out", id, j.Status, d)
		}
	}
	due, ok, err := st.NextDue(ctx)
	if d := due.Sub(time.Now()); err != nil || !ok || d < 30*time.Second || d > 90*time.Second {
		t.Errorf("NextDue = %v (in %v), %v, %v; want about a minute out on this host's clock", due, d, ok, err)
	}

	// Contrast: the same recovery with the host's clock takes the job.
	if _, err := st.Insert(ctx, []store.InsertParams{job(real)}); err != nil {
		t.Fatal(err)
	}
	hostClock := open(t, pgstore.Options{DSN: dsn, Schema: st.Schema(), HostClock: true})
	if got, err := hostClock.Claim(ctx, store.ClaimParams{WorkerID: "a", Max: 1, Now: real}); err != nil || len(got) != 1 {
		t.Fatalf("host-clock Claim = %d, %v", len(got), err)
	}
	if res, err := hostClock.RecoverOrphans(ctx, ahead.Add(-30*time.Second), ahead); err != nil || res.Requeued != 1 {
		t.Errorf("host-clock RecoverOrphans from an hour ahead = %+v, %v; want the fresh job (wrongly) taken", res, err)
	}
}

// listening opens a store whose only way to learn of other processes'
// inserts within the test is a notification (its poll is an hour), and
// waits until its listener is connected.
func listening(t *testing.T, dsn, schema string) *pgstore.Store {
	t.Helper()
	st := open(t, pgstore.Options{DSN: dsn, Schema: schema, PollInterval: time.Hour})
	waitFor(t, "the listener to connect", func() bool { return st.ListenerPID() != 0 })
	return st
}

func TestNotifyWakesAnotherPool(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	producer := open(t, pgstore.Options{DSN: dsn})
	waiter := listening(t, dsn, producer.Schema())
	ctx := t.Context()
	for i := range 3 {
		v0, _ := waiter.DataVersion(ctx)
		n0, _, _ := waiter.ListenerStats()
		changes := waiter.Changes()
		start := time.Now()
		if _, err := producer.Insert(ctx, []store.InsertParams{job(start)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changes:
		case <-time.After(5 * time.Second):
			t.Fatalf("insert %d: the other pool was not woken within 5s", i)
		}
		t.Logf("insert %d: woken after %v", i, time.Since(start))
		if n, polled, _ := waiter.ListenerStats(); n <= n0 || polled != 0 {
			t.Errorf("insert %d: notifications %d -> %d, polled %d; want woken by a notification", i, n0, n, polled)
		}
		if v, _ := waiter.DataVersion(ctx); v == v0 {
			t.Errorf("insert %d: DataVersion unchanged", i)
		}
	}
	// A job made ready again by another process (a retry due now) wakes
	// the waiter too.
	jobs, err := producer.Claim(ctx, store.ClaimParams{WorkerID: "p", Max: 1, Now: time.Now()})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %d, %v", len(jobs), err)
	}
	n0, _, _ := waiter.ListenerStats()
	changes := waiter.Changes()
	now := time.Now()
	if errs := producer.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: jobs[0].ID, Token: jobs[0].Lease},
		Error: "x", ErrorType: "x", RetryAt: now, Now: now}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Fatal("a retry due now did not wake the other pool within 5s")
	}
	if n, _, _ := waiter.ListenerStats(); n <= n0 {
		t.Errorf("retry: notifications %d -> %d, want woken by a notification", n0, n)
	}
}

func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	producer := open(t, pgstore.Options{DSN: dsn})
	waiter := listening(t, dsn, producer.Schema())
	ctx := t.Context()
	old := waiter.ListenerPID()
	if _, err := producer.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(old)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the listener to reconnect", func() bool {
		pid := waiter.ListenerPID()
		return pid != 0 && pid != old
	})
	if _, _, connects := waiter.ListenerStats(); connects != 2 {
		t.Errorf("connects = %d, want 2", connects)
	}
	n0, _, _ := waiter.ListenerStats()
	changes := waiter.Changes()
	if _, err := producer.Insert(ctx, []store.InsertParams{job(time.Now())}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Fatal("after reconnecting, the listener was not woken within 5s")
	}
	if n, _, _ := waiter.ListenerStats(); n <= n0 {
		t.Errorf("notifications %d -> %d, want a notification after the reconnect", n0, n)
	}
}

func TestInsertTx(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	st := open(t, pgstore.Options{DSN: dsn})
	ctx := t.Context()
	exists := func(id store.JobID) bool {
		_, err := st.Job(ctx, id)
		if err != nil && !errors.Is(err, store.ErrJobNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, commit := range []bool{true, false} {
		tx, err := st.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := st.InsertTx(ctx, tx, []store.InsertParams{job(time.Now()), job(time.Now())})
		if err != nil {
			t.Fatalf("InsertTx(pgx.Tx): %v", err)
		}
		if exists(ids[0]) {
			t.Errorf("pgx.Tx: job visible before commit")
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if exists(ids[0]) != commit || exists(ids[1]) != commit {
			t.Errorf("pgx.Tx commit=%v: jobs exist = %v, %v", commit, exists(ids[0]), exists(ids[1]))
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, commit := range []bool{true, false} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := st.InsertTx(ctx, tx, []store.InsertParams{job(time.Now())})
		if err != nil {
			t.Fatalf("InsertTx(*sql.Tx): %v", err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		if exists(ids[0]) != commit {
			t.Errorf("*sql.Tx commit=%v: job exists = %v", commit, exists(ids[0]))
		}
	}
	if _, err := st.InsertTx(ctx, "not a tx", []store.InsertParams{job(time.Now())}); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("InsertTx(string) = %v, want an error naming the type", err)
	}
}

func TestBadInputKeepsBatchAtomic(t *testing.T) {
	t.Parallel()
	st := open(t, pgstore.Options{})
	ctx := t.Context()
	_, err := st.Insert(ctx, []store.InsertParams{job(time.Now()), {Task: "t", Payload: json.RawMessage(`{not json`), Now: time.Now()}})
	if err == nil {
		t.Fatal("Insert with a malformed payload succeeded")
	}
	if jobs, _ := st.Jobs(ctx, store.ListParams{Shard: store.AllShards}); len(jobs) != 0 {
		t.Errorf("after a failed batch %d jobs exist, want none", len(jobs))
	}
	if _, err := st.Insert(ctx, []store.InsertParams{{Shard: 1, Payload: json.RawMessage(`{}`)}}); !errors.Is(err, store.ErrInvalidShard) {
		t.Errorf("Insert(shard 1 of 1) = %v, want ErrInvalidShard", err)
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	t.Parallel()
	st := open(t, pgstore.Options{})
	ctx := t.Context()
	p := job(time.Now())
	p.Metadata = json.RawMessage(`{"traceparent":"00-abc-01","user":{"id":7}}`)
	ids, err := st.Insert(ctx, []store.InsertParams{p, job(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	j, err := st.Job(ctx, ids[0])
	if err != nil || string(j.Metadata) != string(p.Metadata) {
		t.Errorf("Job metadata = %s, %v; want %s", j.Metadata, err, p.Metadata)
	}
	if j, _ := st.Job(ctx, ids[1]); j.Metadata != nil {
		t.Errorf("job without metadata has %s, want nil", j.Metadata)
	}
	claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 2, Now: time.Now()})
	if err != nil || len(claimed) != 2 || string(claimed[0].Metadata) != string(p.Metadata) || claimed[1].Metadata != nil {
		t.Errorf("claimed = %d jobs, %v; want the metadata on the first only", len(claimed), err)
	}
}

// Two batches over the same jobs given in opposite orders lock the rows in
// one order, so concurrent heartbeats (or a heartbeat and an
// acknowledgement) never deadlock.
func TestBatchesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	st := open(t, pgstore.Options{})
	ctx := t.Context()
	in := make([]store.InsertParams, 40)
	for i := range in {
		in[i] = job(time.Now())
	}
	if _, err := st.Insert(ctx, in); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: len(in), Now: time.Now()})
	if err != nil || len(jobs) != len(in) {
		t.Fatalf("Claim = %d, %v", len(jobs), err)
	}
	up := make([]store.Lease, len(jobs))
	for i, j := range jobs {
		up[i] = store.Lease{ID: j.ID, Token: j.Lease}
	}
	down := slices.Clone(up)
	slices.Reverse(down)
	var wg sync.WaitGroup
	for _, leases := range [][]store.Lease{up, down, up, down} {
		wg.Go(func() {
			for range 15 {
				for _, err := range st.Heartbeat(ctx, leases, time.Now()) {
					if err != nil {
						t.Errorf("Heartbeat: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
