package queuemaxpg_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/internal/pgtest"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// The generated …Tx methods of examples/tasks (module
// github.com/queuemax/queuemax), here because they take a pgx.Tx.

// TestTxStubs_SQLite: every generated …Tx method returns
// ErrTxUnsupported on the SQLite store and stores nothing.
func TestTxStubs_SQLite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: t.TempDir(), Shards: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ts := tasks.New(c)
	var tx pgx.Tx // any value: the store is checked first
	errs := map[string]error{}
	_, errs["DelayTx"] = ts.SendEmail.DelayTx(ctx, tx, "ada@example.com", "Hi")
	_, errs["ScheduleAtTx"] = ts.SendEmail.ScheduleAtTx(ctx, tx, time.Now().Add(time.Hour), "ada@example.com", "Hi")
	_, errs["ScheduleInTx"] = ts.GenerateReport.ScheduleInTx(ctx, tx, time.Hour, 1, "2026-03")
	_, errs["MapTx"] = ts.GenerateReport.MapTx(ctx, tx, []int64{1, 2}, "2026-03")
	_, errs["MapArgsTx"] = ts.SendEmail.MapArgsTx(ctx, tx, []tasks.SendEmailArgs{{To: "a@example.com"}})
	for name, err := range errs {
		if !errors.Is(err, queuemax.ErrTxUnsupported) {
			t.Errorf("%s error = %v, want ErrTxUnsupported", name, err)
		}
	}
	if s, err := c.Stats(ctx); err != nil || s.Pending+s.Scheduled != 0 {
		t.Errorf("Stats = %+v, %v; want nothing stored", s, err)
	}
	var unbound tasks.Tasks
	if _, err := unbound.SendEmail.DelayTx(ctx, tx, "a@example.com", "Hi"); !errors.Is(err, queuemax.ErrNotBound) {
		t.Errorf("unbound DelayTx error = %v, want ErrNotBound", err)
	}
}

// TestTxStubs_Postgres: the generated …Tx methods write their jobs in a
// pgx.Tx, visible after the commit with the task's defaults, and gone
// with a rollback. It skips when PostgreSQL is down, except in CI.
func TestTxStubs_Postgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) }) // after the drop below
	schema := fmt.Sprintf("qm_stubs_%d_%d", os.Getpid(), rand.Uint32())
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	st, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	c, err := queuemax.Open(ctx, queuemax.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ts := tasks.New(c)

	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one, err := ts.SendEmail.DelayTx(ctx, tx, "ada@example.com", "Hi")
	if err != nil {
		t.Fatalf("DelayTx: %v", err)
	}
	later, err := ts.SendEmail.ScheduleInTx(ctx, tx, time.Hour, "grace@example.com", "Later")
	if err != nil {
		t.Fatalf("ScheduleInTx: %v", err)
	}
	many, err := ts.GenerateReport.MapTx(ctx, tx, []int64{1, 2, 3}, "2026-03")
	if err != nil || len(many) != 3 {
		t.Fatalf("MapTx = %v, %v", many, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	j, err := c.Job(ctx, one)
	if err != nil || j.Task != ts.SendEmail.Name() || j.Status != queuemax.StatusPending || string(j.Payload) != `{"to":"ada@example.com","subject":"Hi"}` {
		t.Errorf("DelayTx job = %+v, %v", j, err)
	}
	if j, err := c.Job(ctx, later); err != nil || j.Status != queuemax.StatusScheduled {
		t.Errorf("ScheduleInTx job = %+v, %v; want scheduled", j, err)
	}
	if s, err := ts.GenerateReport.Stats(ctx); err != nil || s.Pending != 3 {
		t.Errorf("GenerateReport stats = %+v, %v; want 3 pending", s, err)
	}

	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := ts.SendEmail.MapArgsTx(ctx, tx, []tasks.SendEmailArgs{{To: "x@example.com", Subject: "x"}})
	if err != nil || len(gone) != 1 {
		t.Fatalf("MapArgsTx = %v, %v", gone, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Job(ctx, gone[0]); !errors.Is(err, queuemax.ErrJobNotFound) {
		t.Errorf("rolled-back job: %v, want ErrJobNotFound", err)
	}
}
