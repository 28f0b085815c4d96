package queuemax_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// pgTx is one test's PostgreSQL fixture: a pool of the application's own
// and a fresh schema, dropped when the test ends.
type pgTx struct {
	dsn    string
	schema string
	pool   *pgxpool.Pool
}

// openPG opens the PostgreSQL store of dsn in schema.
func openPG(t *testing.T, dsn, schema string) queuemax.Store {
	t.Helper()
	st, err := queuemaxpg.Open(t.Context(), dsn, queuemaxpg.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// setupPGTx connects to PostgreSQL or skips the test, saying why; in CI
// (CI=true) an unreachable server fails it instead.
func setupPGTx(t *testing.T) *pgTx {
	t.Helper()
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	p := &pgTx{dsn: dsn, schema: fmt.Sprintf("qm_tx_%d_%d", os.Getpid(), rand.Uint32()), pool: pool}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+p.schema+"; CREATE TABLE "+p.schema+".users (id bigserial PRIMARY KEY, email text NOT NULL)"); err != nil {
		pool.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA "+p.schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", p.schema, err)
		}
		pool.Close()
	})
	return p
}

// open opens a client on the fixture's schema with handlers.
func (p *pgTx) open(t *testing.T, handlers ...queuemax.Handler) *queuemax.Client {
	t.Helper()
	// A producer without handlers stores tasks no worker published yet
	// (the documented opt-in).
	c, err := queuemax.Open(t.Context(), queuemax.Config{Store: openPG(t, p.dsn, p.schema), Handlers: handlers, AllowUnknownTasks: len(handlers) == 0,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("Open(Store): %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (p *pgTx) users(t *testing.T) int {
	t.Helper()
	var n int
	if err := p.pool.QueryRow(t.Context(), "SELECT count(*) FROM "+p.schema+".users").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

type signupArgs struct {
	Email string `json:"email"`
}

// txKinds are the transaction types EnqueueTx takes, each with the
// statement that writes the application's own row in it.
func txKinds(p *pgTx) []struct {
	name  string
	begin func(t *testing.T) (tx any, insert func() error, commit, rollback func() error)
} {
	ins := "INSERT INTO " + p.schema + ".users (email) VALUES ('ada@example.com')"
	fromDB := func(db *sql.DB) func(t *testing.T) (any, func() error, func() error, func() error) {
		return func(t *testing.T) (any, func() error, func() error, func() error) {
			tx, err := db.BeginTx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return tx, func() error { _, err := tx.ExecContext(t.Context(), ins); return err }, tx.Commit, tx.Rollback
		}
	}
	return []struct {
		name  string
		begin func(t *testing.T) (any, func() error, func() error, func() error)
	}{
		{"pgx.Tx", func(t *testing.T) (any, func() error, func() error, func() error) {
			tx, err := p.pool.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var _ pgx.Tx = tx
			ctx := context.WithoutCancel(t.Context())
			return tx, func() error { _, err := tx.Exec(ctx, ins); return err },
				func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) }
		}},
		{"sql.Tx from OpenDBFromPool", func(t *testing.T) (any, func() error, func() error, func() error) {
			db := stdlib.OpenDBFromPool(p.pool)
			t.Cleanup(func() { db.Close() })
			return fromDB(db)(t)
		}},
		{"sql.Tx from sql.Open(pgx)", func(t *testing.T) (any, func() error, func() error, func() error) {
			db, err := sql.Open("pgx", p.dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return fromDB(db)(t)
		}},
	}
}

// TestClient_EnqueueTxPostgres: a job enqueued in a transaction is
// invisible until the commit, exists and runs after it, and never exists
// after a rollback, together with the application's own row, for each
// transaction type.
func TestClient_EnqueueTxPostgres(t *testing.T) {
	t.Parallel()
	p := setupPGTx(t)
	ran := make(chan signupArgs, 10)
	h := queuemax.Define("t.Signup", queuemax.TaskOptions{}, func(_ context.Context, a signupArgs) error {
		ran <- a
		return nil
	})
	c := p.open(t, h)
	task := queuemax.NewTask[signupArgs](c, "t.Signup", h.Options)
	runCtx, stop := context.WithCancel(t.Context())
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	for _, k := range txKinds(p) {
		t.Run(k.name+"/Commit", func(t *testing.T) {
			before := p.users(t)
			tx, insert, commit, _ := k.begin(t)
			if err := insert(); err != nil {
				t.Fatal(err)
			}
			id, err := task.EnqueueTx(t.Context(), tx, signupArgs{Email: k.name})
			if err != nil {
				t.Fatalf("EnqueueTx: %v", err)
			}
			if _, err := c.Job(t.Context(), id); !errors.Is(err, queuemax.ErrJobNotFound) {
				t.Errorf("Job before commit: %v, want ErrJobNotFound (the job must stay invisible)", err)
			}
			select {
			case a := <-ran:
				t.Fatalf("job %q ran before its transaction committed", a.Email)
			default:
			}
			if err := commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
			select {
			case a := <-ran:
				if a.Email != k.name {
					t.Errorf("ran payload %q, want %q", a.Email, k.name)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("committed job did not run within 30s")
			}
			if got := p.users(t); got != before+1 {
				t.Errorf("users = %d, want %d", got, before+1)
			}
		})
		t.Run(k.name+"/Rollback", func(t *testing.T) {
			before := p.users(t)
			tx, insert, _, rollback := k.begin(t)
			if err := insert(); err != nil {
				t.Fatal(err)
			}
			ids, err := c.EnqueueManyTx(t.Context(), tx, []queuemax.EnqueueParams{
				{Task: "t.Signup", Payload: signupArgs{Email: "a"}},
				{Task: "t.Signup", Payload: signupArgs{Email: "b"}},
			})
			if err != nil || len(ids) != 2 {
				t.Fatalf("EnqueueManyTx = %v, %v", ids, err)
			}
			if err := rollback(); err != nil {
				t.Fatalf("rollback: %v", err)
			}
			for _, id := range ids {
				if _, err := c.Job(t.Context(), id); !errors.Is(err, queuemax.ErrJobNotFound) {
					t.Errorf("Job(%d) after rollback: %v, want ErrJobNotFound", id, err)
				}
			}
			if got := p.users(t); got != before {
				t.Errorf("users = %d after rollback, want %d", got, before)
			}
		})
	}
	// Nothing else ran: the rolled-back jobs never became visible.
	s, err := c.TaskStats(t.Context(), "t.Signup")
	if err != nil || s.Pending+s.Scheduled+s.Processing != 0 {
		t.Errorf("TaskStats = %+v, %v; want nothing left", s, err)
	}
	select {
	case a := <-ran:
		t.Errorf("a rolled-back job ran: %+v", a)
	default:
	}
}

// TestClient_EnqueueTxPostgresOptions: the scheduled and typed variants
// store what their non-transactional twins store; a value that is not a
// transaction is an error naming its type, and an invalid payload writes
// nothing and leaves the transaction usable.
func TestClient_EnqueueTxPostgresOptions(t *testing.T) {
	t.Parallel()
	p := setupPGTx(t)
	c := p.open(t)
	task := queuemax.NewTask[signupArgs](c, "t.Later", queuemax.TaskOptions{Priority: queuemax.PriorityHigh})
	ctx := t.Context()
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	idAt, err := task.EnqueueAtTx(ctx, tx, at, signupArgs{Email: "at"})
	if err != nil {
		t.Fatalf("EnqueueAtTx: %v", err)
	}
	idIn, err := task.EnqueueInTx(ctx, tx, time.Hour, signupArgs{Email: "in"})
	if err != nil {
		t.Fatalf("EnqueueInTx: %v", err)
	}
	if _, err := c.EnqueueTx(ctx, tx, "t.Later", []int{1}, queuemax.Opts{AllowUnknownTask: true}); !errors.Is(err, queuemax.ErrInvalidPayload) {
		t.Errorf("EnqueueTx(array) = %v, want ErrInvalidPayload", err)
	}
	ids, err := task.EnqueueManyTx(ctx, tx, []signupArgs{{"m1"}, {"m2"}, {"m3"}})
	if err != nil || len(ids) != 3 {
		t.Fatalf("EnqueueManyTx = %v, %v", ids, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	j, err := c.Job(ctx, idAt)
	if err != nil || j.Status != queuemax.StatusScheduled || j.Priority != queuemax.PriorityHigh {
		t.Fatalf("EnqueueAtTx job = %+v, %v; want scheduled, high priority", j, err)
	}
	// The store turns run-at times into offsets on the database's clock,
	// so the stored time may differ from at by the clocks' skew.
	if d := j.NextRetryAt.Sub(at).Abs(); d > 5*time.Second {
		t.Errorf("EnqueueAtTx run at = %v, want about %v", j.NextRetryAt, at)
	}
	if j, err := c.Job(ctx, idIn); err != nil || j.Status != queuemax.StatusScheduled {
		t.Errorf("EnqueueInTx job = %+v, %v; want scheduled", j, err)
	}
	s, err := task.Stats(ctx)
	if err != nil || s.Scheduled != 2 || s.Pending != 3 {
		t.Errorf("Stats = %+v, %v; want 2 scheduled, 3 pending", s, err)
	}
	if _, err := c.EnqueueTx(ctx, "not a tx", "t.Later", signupArgs{}, queuemax.Opts{}); err == nil {
		t.Error("EnqueueTx(string) = nil error, want one naming the type")
	}
}

// TestEnqueueTx_Unique: a unique job enqueued in the application's
// transaction is decided by the same index, for every transaction type: a
// duplicate of a committed job gets its ID, two in one transaction store
// one, and a rolled-back job frees its key.
func TestEnqueueTx_Unique(t *testing.T) {
	t.Parallel()
	p := setupPGTx(t)
	h := queuemax.Define("t.Signup", queuemax.TaskOptions{Unique: queuemax.UniqueOpts{ByArgs: true}},
		func(context.Context, signupArgs) error { return nil })
	c := p.open(t, h)
	task := queuemax.NewTask[signupArgs](c, h.Name, h.Options)
	for i, k := range txKinds(p) {
		t.Run(k.name, func(t *testing.T) {
			args := signupArgs{Email: fmt.Sprintf("u%d@example.com", i)}
			tx, _, commit, rollback := k.begin(t)
			a, err := task.EnqueueTx(t.Context(), tx, args)
			if err != nil {
				t.Fatalf("EnqueueTx: %v", err)
			}
			b, err := task.EnqueueTx(t.Context(), tx, args)
			if err != nil || b != a {
				t.Fatalf("second EnqueueTx in the transaction = %d, %v; want %d", b, err, a)
			}
			if err := rollback(); err != nil {
				t.Fatal(err)
			}
			r, err := task.EnqueueResult(t.Context(), args)
			if err != nil || r.Duplicate {
				t.Fatalf("enqueue after rollback = %+v, %v; want a new job", r, err)
			}
			tx, _, commit, rollback = k.begin(t)
			defer rollback()
			ids, err := task.EnqueueManyTx(t.Context(), tx, []signupArgs{args, {Email: "other" + args.Email}})
			if err != nil || ids[0] != r.ID {
				t.Fatalf("EnqueueManyTx = %v, %v; want [0] = the committed %d", ids, err, r.ID)
			}
			if err := commit(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
