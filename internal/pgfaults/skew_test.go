package pgfaults_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
)

// Three worker processes whose clocks are 30 s ahead, 30 s behind and
// right share a queue, with a stuck timeout (5 s) far below the skew:
// every time decision is the database's, so no scheduled job runs early
// (whoever enqueued it: each process enqueues jobs due in 2 s by its own
// clock), no live lease is taken over (no re-run, no fenced completion),
// and a periodic task every second fires every slot once, none early.
func TestSkewedClocks(t *testing.T) {
	t.Parallel()
	const (
		delayed = 150 // per process, due in 2 s
		plain   = 900
		delay   = 2 * time.Second
	)
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ctx := t.Context()
	prod, err := openClient(ctx, dsn, schema, queuemax.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	start := time.Now()
	var ws []*worker
	for i, skew := range []time.Duration{30 * time.Second, -30 * time.Second, 0} {
		ws = append(ws, startWorker(t, dsn, schema, 5*time.Second, envSkew+"="+skew.String(), envSlow+"=10ms", envTick+"=1s",
			fmt.Sprintf("%s=%d %d %v", envDelay, plain+i*delayed, delayed, delay)))
	}
	// The backlog, once the workers (idle so far) have enqueued their
	// delayed jobs: they must wait for their time while others run.
	ps := make([]queuemax.EnqueueParams, plain)
	for i := range ps {
		ps[i] = queuemax.EnqueueParams{Task: "t.Job", Payload: args{N: i}}
	}
	if _, err := prod.EnqueueMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	n := plain + 3*delayed
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	waitDone(t, conn, schema, n, 2*time.Minute)
	// Let the schedulers run for at least 6 s of slots.
	for time.Since(start) < 7*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	var lost int64
	for _, w := range ws {
		_, l := w.stop(t)
		lost += l
	}
	ex := executions(t, ws)
	reruns, _ := verdict(t, conn, schema, n, ex)
	if reruns != 0 || lost != 0 {
		t.Errorf("%d re-runs and %d fenced completions: a skewed process took over live leases", reruns, lost)
	}
	early := 0
	rows, err := conn.Query(ctx, `SELECT (payload->>'n')::int, (payload->>'due')::bigint FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()+
		` WHERE task = 't.Job' AND (payload->>'due')::bigint > 0`)
	if err != nil {
		t.Fatal(err)
	}
	due := map[int]int64{}
	for rows.Next() {
		var k int
		var d int64
		if err := rows.Scan(&k, &d); err != nil {
			t.Fatal(err)
		}
		due[k] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(due) != 3*delayed {
		t.Fatalf("%d delayed jobs stored, want %d", len(due), 3*delayed)
	}
	var earliest int64 = 1 << 62 // ms from due to the first run
	for k, d := range due {
		for _, r := range ex[k] {
			earliest = min(earliest, r.at-d)
			// 50 ms of slack: the database's clock and this host's are
			// the same clock read at different moments.
			if r.at < d-50 {
				if early++; early <= 5 {
					t.Errorf("job %d (enqueued by worker %d) ran %d ms early, by worker %d", k, (k-plain)/delayed, d-r.at, r.worker)
				}
			}
		}
	}
	if early > 0 {
		t.Errorf("%d delayed jobs ran early", early)
	}

	// Periodic slots: consecutive seconds, each fired once, never before
	// its time.
	rows, err = conn.Query(ctx, `SELECT slot, fired_at FROM `+pgx.Identifier{schema, "periodic_runs"}.Sanitize()+
		` WHERE task = 't.Tick' ORDER BY slot`)
	if err != nil {
		t.Fatal(err)
	}
	var slots []time.Time
	for rows.Next() {
		var slot, fired time.Time
		if err := rows.Scan(&slot, &fired); err != nil {
			t.Fatal(err)
		}
		if fired.Before(slot) {
			t.Errorf("slot %v fired early, at %v", slot, fired)
		}
		slots = append(slots, slot)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(slots) < 5 {
		t.Fatalf("%d periodic slots fired in about 7 s, want at least 5: %v", len(slots), slots)
	}
	for i := 1; i < len(slots); i++ {
		if d := slots[i].Sub(slots[i-1]); d != time.Second {
			t.Errorf("slots %v and %v are %v apart: a slot was missed", slots[i-1], slots[i], d)
		}
	}
	t.Logf("%d jobs (%d delayed: the earliest ran %d ms after its time), %d periodic slots, %d re-runs, %d fenced",
		n, 3*delayed, earliest, len(slots), reruns, lost)
}
