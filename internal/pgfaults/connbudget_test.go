package pgfaults_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
)

// Twenty worker processes and a producer, all with the default Config,
// share one server with max_connections = 100 while they run jobs: no
// client opens more than its budget of 4 connections, the server never
// runs out, every job completes.
func TestConnectionBudget_TwentyProcesses(t *testing.T) {
	t.Parallel()
	procs, n := 20, 3000
	if testing.Short() {
		procs, n = 8, 800
	}
	cl := pgtest.NewCluster(t, "max_connections=100")
	const schema = "qm_conns"
	ctx := t.Context()
	prod, err := openClient(ctx, cl.DSN+"&application_name=qm_producer", schema, queuemax.Config{
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var ws []*worker
	for i := range procs {
		ws = append(ws, startWorker(t, fmt.Sprintf("%s&application_name=qm_w%d", cl.DSN, i), schema, 10*time.Second, envSlow+"=1ms"))
	}
	conn, err := pgx.Connect(ctx, cl.DSN+"&application_name=qm_observer")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// The producer: 16 goroutines, one job per call, while everyone runs.
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for k := g; k < n; k += 16 {
				if _, err := prod.Enqueue(ctx, "t.Job", args{N: k}, queuemax.Opts{}); err != nil {
					t.Errorf("enqueue %d: %v", k, err)
					return
				}
			}
		})
	}
	var peakTotal, peakOne int
	var peakApp string
	sample := func() (done bool) {
		rows, err := conn.Query(ctx, `SELECT application_name, count(*) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND application_name LIKE 'qm\_%' AND application_name <> 'qm_observer'
			GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for rows.Next() {
			var app string
			var c int
			if err := rows.Scan(&app, &c); err != nil {
				t.Fatal(err)
			}
			total += c
			if c > peakOne {
				peakOne, peakApp = c, app
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		peakTotal = max(peakTotal, total)
		var left int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()+` WHERE status <> 'completed'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0
	}
	deadline := time.Now().Add(3 * time.Minute)
	produced := make(chan struct{})
	go func() { wg.Wait(); close(produced) }()
	for {
		done := sample()
		select {
		case <-produced:
		default:
			done = false // still enqueuing
		}
		if done {
			var all int
			conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "jobs"}.Sanitize()).Scan(&all)
			if all == n {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("jobs not done after 3 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d processes + a producer: at most %d connections in all, %d for one client (%s)", procs, peakTotal, peakOne, peakApp)
	if peakOne > 4 {
		t.Errorf("client %s held %d connections, want at most the default budget of 4", peakApp, peakOne)
	}
	if limit := 4 * (procs + 1); peakTotal > limit {
		t.Errorf("%d connections in all, want at most %d", peakTotal, limit)
	}
	var processed int64
	for _, w := range ws {
		p, _ := w.stop(t)
		processed += p
	}
	if processed != int64(n) {
		t.Errorf("%d completions acknowledged, want %d", processed, n)
	}
}
