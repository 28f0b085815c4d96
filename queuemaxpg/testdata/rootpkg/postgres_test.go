package queuemax

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
)

// This file and the others of this directory are tests of package
// queuemax (the module's root) that need the PostgreSQL store: queuemaxpg's
// TestOverlaid adds them to that package (go test -overlay), since the root
// module does not require this one. Here they set the root tests' pgHook.
func init() {
	pgHook.DSN = func(t testing.TB) string { return pgtest.DSN(t) }
	pgHook.Schema = pgtest.Schema
	pgHook.Exec = pgtest.Exec
	// pgstore, not queuemaxpg: queuemaxpg imports this package.
	pgHook.Open = func(ctx context.Context, dsn, schema string, maxConns int) (Store, error) {
		return pgstore.Open(ctx, pgstore.Options{DSN: dsn, Schema: schema, MaxConns: int32(maxConns)})
	}
	pgHook.ChildMain = pgChildMain
}

func TestPostgres_RunsJobsLikeSQLite(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	h := DefineResult("t.Echo", TaskOptions{}, func(_ context.Context, a echoArgs) (int, error) { return a.N * 2, nil })
	b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: []Handler{h}})
	if b.c.Shards() != 1 {
		t.Errorf("Shards() = %d, want 1 (one logical shard on PostgreSQL)", b.c.Shards())
	}
	evs := collect(b.c, EventCompleted)
	stop := run(t, b.c)
	defer stop()
	// Enqueued after Run started: the idle worker must be woken.
	id, err := b.c.Enqueue(b.ctx, "t.Echo", echoArgs{21}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	waitEvents(t, evs, 1)
	stop()
	j, err := b.c.Job(b.ctx, id)
	if err != nil || j.Status != StatusCompleted || string(j.Result) != "42" {
		t.Errorf("job = %+v, %v; want completed with 42", j, err)
	}
	var tables int
	conn, err := pgx.Connect(b.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(b.ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, schema).Scan(&tables); err != nil || tables == 0 {
		t.Errorf("tables in schema %s = %d, %v; want the queue's tables there", schema, tables, err)
	}
}

// An idle worker of one client is woken by another client's enqueue (its
// own pool and listener, as on another host) through a notification,
// within milliseconds rather than at its next fallback poll.
func TestPostgres_IdleWorkerWokenByAnotherClient(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	started := make(chan time.Time, 10)
	h := Define("t.Wake", TaskOptions{}, func(context.Context, struct{}) error { started <- time.Now(); return nil })
	worker := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: []Handler{h}})
	producer := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
	ps := worker.c.st.(*pgstore.Store)
	deadline := time.Now().Add(20 * time.Second)
	for ps.ListenerPID() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop := run(t, worker.c)
	defer stop()
	// The listener connection exists before its LISTEN has run: wait until
	// one enqueue is seen by notification, so the measured ones are too.
	for {
		before, _, _ := ps.ListenerStats()
		if _, err := producer.c.Enqueue(producer.ctx, "t.Wake", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the idle worker did not start the other client's job within 10s")
		}
		if after, _, _ := ps.ListenerStats(); after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker's listener never received a notification")
		}
	}
	n0, _, _ := ps.ListenerStats()
	var worst time.Duration
	const n = 5
	for range n {
		at := time.Now()
		if _, err := producer.c.Enqueue(producer.ctx, "t.Wake", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-started:
			worst = max(worst, s.Sub(at))
		case <-time.After(10 * time.Second):
			t.Fatal("the idle worker did not start the other client's job within 10s")
		}
	}
	t.Logf("enqueue to start, worst of %d: %v", n, worst)
	if notified, _, _ := ps.ListenerStats(); notified-n0 < n {
		t.Errorf("the worker's store got %d notifications for %d enqueues, want one each", notified-n0, n)
	}
	if worst > time.Second {
		t.Errorf("worst enqueue-to-start latency %v, want well under the 1s fallback poll", worst)
	}
}

// The scheduler of a host whose clock runs two hours ahead still sees the
// database's time, so it neither fires slots early nor registers them two
// hours late; that host's slots agree with every other host's.
func TestPostgres_SchedulerUsesDatabaseClock(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	h := periodicHandler("t.Hourly", Periodic{Every: time.Hour})
	b := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: []Handler{h}, now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	s := newTestScheduler(t, b.c)
	if d := s.Now().Sub(time.Now()); d.Abs() > time.Minute {
		t.Fatalf("scheduler clock is %v off the database's, want the database's time", d)
	}
	if err := s.Register(b.ctx, s.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tick(b.ctx, s.Now()); err != nil {
		t.Fatal(err)
	}
	states, err := b.c.st.PeriodicList(b.ctx)
	if err != nil || len(states) != 1 {
		t.Fatalf("PeriodicList = %v, %v", states, err)
	}
	if d := states[0].NextRun.Sub(time.Now()); d < 50*time.Minute || d > 61*time.Minute {
		t.Errorf("next run in %v, want about an hour from the database's now", d)
	}
	if jobs, _ := b.c.Jobs(b.ctx, ListParams{Task: "t.Hourly"}); len(jobs) != 0 {
		t.Errorf("a host two hours ahead fired %d slots, want none yet", len(jobs))
	}
}
