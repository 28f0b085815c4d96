package pgfaults_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// Three worker processes run while a producer keeps enqueuing and the
// server restarts three times (fast, immediate, fast): every job is
// stored once and completed, re-runs are only of attempts in flight at a
// restart, and the workers' listeners are back afterwards.
func TestServerRestarts(t *testing.T) {
	t.Parallel()
	n := 10000
	if testing.Short() {
		n = 2000
	}
	cl := pgtest.NewCluster(t)
	const schema = "qm_restarts"
	ctx := t.Context()
	prod, err := openClient(ctx, cl.DSN, schema, queuemax.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var ws []*worker
	for range 3 {
		ws = append(ws, startWorker(t, cl.DSN, schema, 8*time.Second))
	}

	// The producer: four goroutines enqueue one job at a time, a fifth
	// in batches of 50. An enqueue whose outcome is unknown is checked as
	// docs/postgres.md says (here: by its payload, from outside) once the
	// restarts are over.
	var (
		sent      atomic.Int64
		mu        sync.Mutex
		uncertain []int
		wg        sync.WaitGroup
	)
	enqueue := func(ks []int) {
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
		switch {
		case errors.Is(err, queuemaxpg.ErrCommitUnknown):
			mu.Lock()
			uncertain = append(uncertain, ks...)
			t.Logf("unknown: %v", err)
			mu.Unlock()
		case err != nil:
			t.Errorf("enqueue %v: %v", ks, err)
		}
		sent.Add(int64(len(ks)))
	}
	const batched = 5
	for g := range batched {
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
	for i, mode := range []string{"fast", "immediate", "fast"} {
		for sent.Load() < int64(n*(i+1)/4) && !t.Failed() {
			time.Sleep(5 * time.Millisecond)
		}
		start := time.Now()
		cl.Restart(mode)
		t.Logf("restart -m %s at %d enqueued: %v", mode, sent.Load(), time.Since(start).Round(time.Millisecond))
	}
	wg.Wait()

	conn, err := pgx.Connect(ctx, cl.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, k := range uncertain {
		var have int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE (payload->>'n')::int = $1`, k).Scan(&have); err != nil {
			t.Fatal(err)
		}
		if have == 0 {
			if _, err := prod.Enqueue(ctx, "t.Job", args{N: k}, queuemax.Opts{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d enqueues came back with ErrCommitUnknown", len(uncertain))
	waitDone(t, conn, schema, n, 3*time.Minute)

	// Every process listens again: the producer and the three workers.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var listening int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'`).Scan(&listening); err != nil {
			t.Fatal(err)
		}
		if listening == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions listening after the restarts, want 4 (three workers and the producer)", listening)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var processed, lost int64
	for _, w := range ws {
		p, l := w.stop(t)
		processed += p
		lost += l
	}
	reruns, _ := verdict(t, conn, schema, n, executions(t, ws))
	t.Logf("%d jobs, %d completions acknowledged, %d re-runs, %d acknowledgements fenced", n, processed, reruns, lost)
	if processed != int64(n) {
		t.Errorf("workers acknowledged %d completions, want %d: an acknowledgement was lost instead of retried", processed, n)
	}
}
