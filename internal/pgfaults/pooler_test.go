package pgfaults_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// Behind pgbouncer in transaction (or statement) pooling mode Open
// refuses with ErrTransactionPooling, whose message says what to change;
// in session mode everything works: two worker processes and a producer
// through the pooler run every job once, woken by LISTEN through it.
func TestPgbouncer(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, mode := range []string{"transaction", "statement"} {
		t.Run(mode, func(t *testing.T) {
			through := pgtest.Bouncer(t, dsn, mode)
			_, err := openClient(t.Context(), through, pgtest.Schema(t, dsn), queuemax.Config{Logger: slog.New(slog.DiscardHandler)})
			if !errors.Is(err, queuemaxpg.ErrTransactionPooling) {
				t.Fatalf("Open through pgbouncer in %s mode: %v, want ErrTransactionPooling", mode, err)
			}
			t.Logf("%v", err)
		})
	}
	t.Run("session", func(t *testing.T) {
		through := pgtest.Bouncer(t, dsn, "session")
		schema := pgtest.Schema(t, dsn)
		ctx := t.Context()
		prod, err := openClient(ctx, through, schema, queuemax.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("Open through pgbouncer in session mode: %v", err)
		}
		defer prod.Close()
		ws := []*worker{startWorker(t, through, schema, 10*time.Second), startWorker(t, through, schema, 10*time.Second)}
		const n = 600
		for k := range n {
			if _, err := prod.Enqueue(ctx, "t.Job", args{N: k}, queuemax.Opts{}); err != nil {
				t.Fatal(err)
			}
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		waitDone(t, conn, schema, n, time.Minute)
		var lost int64
		for _, w := range ws {
			_, l := w.stop(t)
			lost += l
		}
		if reruns, _ := verdict(t, conn, schema, n, executions(t, ws)); reruns != 0 || lost != 0 {
			t.Errorf("%d re-runs, %d fenced completions through the pooler, want none", reruns, lost)
		}
	})
}
