package queuemax_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/queuemax/queuemax"
)

// TestEnqueueWorkflowTx: a workflow enqueued in the application's
// transaction exists if and only if it commits, with pgx and with
// database/sql; SQLite has no such transactions.
func TestEnqueueWorkflowTx(t *testing.T) {
	t.Parallel()
	p := setupPGTx(t)
	c := p.open(t)
	ctx := t.Context()
	wf := func() *queuemax.Workflow {
		w := queuemax.NewWorkflow("signup")
		w.Add("create", "t.Create", signupArgs{Email: "a@b"})
		w.Add("mail", "t.Mail", signupArgs{Email: "a@b"}, queuemax.After("create"))
		return w
	}
	// Rolled back: nothing stored.
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.EnqueueWorkflowTx(ctx, tx, wf())
	if err != nil {
		t.Fatalf("EnqueueWorkflowTx: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Workflow(ctx, id); !errors.Is(err, queuemax.ErrWorkflowNotFound) {
		t.Fatalf("Workflow after rollback = %v, want ErrWorkflowNotFound", err)
	}
	if st, err := c.Stats(ctx); err != nil || st.Pending+st.Scheduled != 0 {
		t.Fatalf("jobs after rollback: %+v, %v", st, err)
	}
	// Committed, with pgx.
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO "+p.schema+".users (email) VALUES ('a@b')"); err != nil {
			return err
		}
		id, err = c.EnqueueWorkflowTx(ctx, tx, wf())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Workflow(ctx, id)
	if err != nil || len(info.Steps) != 2 || info.Steps[1].Status != queuemax.StepWaiting || p.users(t) != 1 {
		t.Fatalf("Workflow after commit = %+v, %v", info, err)
	}
	// Committed, with database/sql.
	db, err := sql.Open("pgx", p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := c.EnqueueWorkflowTx(ctx, stx, wf())
	if err != nil {
		stx.Rollback()
		t.Fatalf("EnqueueWorkflowTx(*sql.Tx): %v", err)
	}
	if err := stx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Workflow(ctx, id2); err != nil {
		t.Fatalf("Workflow after database/sql commit: %v", err)
	}
	if _, err := c.EnqueueWorkflowTx(ctx, 42, wf()); err == nil {
		t.Error("EnqueueWorkflowTx with a non-transaction: no error")
	}
	if _, err := c.EnqueueWorkflowTx(ctx, (*sql.Tx)(nil), wf()); !errors.Is(err, queuemax.ErrInvalidTx) {
		t.Errorf("EnqueueWorkflowTx(nil) = %v, want ErrInvalidTx", err)
	}
	lite, err := queuemax.Open(ctx, queuemax.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if _, err := lite.EnqueueWorkflowTx(ctx, tx, wf()); !errors.Is(err, queuemax.ErrTxUnsupported) {
		t.Errorf("SQLite EnqueueWorkflowTx = %v, want ErrTxUnsupported", err)
	}
}
