package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrTransactionPooling is returned by Open when the DSN reaches
// PostgreSQL through a pooler that does not keep a client on one server
// session (pgbouncer's pool_mode = transaction or statement).
var ErrTransactionPooling = errors.New("queuemax: the DSN reaches PostgreSQL through a pooler in transaction or statement pooling mode (pgbouncer pool_mode = transaction): queuemax needs whole sessions — LISTEN for wake-ups, a session advisory lock for migrations, prepared statements and per-session settings; set pool_mode = session for this database in the pooler (for pgbouncer, pool_mode=session in its [databases] entry), or point the DSN at the server itself")

// checkSessions refuses a pooler that hands a client's statements to
// whichever server session is free. A direct connection is recognised at
// once: the backend's pid is the one the server announced at connect
// (a pooler announces a pid of its own). Behind a pooler, a session x
// asks its backend's pid, a second session y opens a transaction and asks
// its own, and x asks again. A session pooler binds each client to its
// server session: y's pid differs from x's and x's stays. A transaction
// pooler puts y's transaction on the server session x just released (the
// most recently used first, pgbouncer's default) or moves x: either shows.
func checkSessions(ctx context.Context, main, other *pgxpool.Pool) error {
	x, err := main.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	defer x.Release()
	var pid1 uint32
	// The simple protocol: no prepared statement, which a transaction
	// pooler would lose or clash with another client's.
	simple := pgx.QueryExecModeSimpleProtocol
	if err := x.QueryRow(ctx, `SELECT pg_backend_pid()`, simple).Scan(&pid1); err != nil {
		return fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	if pid1 == x.Conn().PgConn().PID() {
		return nil // the server itself
	}
	y, err := other.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	defer y.Release()
	tx, err := y.Begin(ctx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "08P01" {
		// pgbouncer in statement mode: "transaction blocks not allowed".
		return fmt.Errorf("%w (%v)", ErrTransactionPooling, err)
	}
	if err != nil {
		return fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var pidY, pid2 uint32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`, simple).Scan(&pidY); err != nil {
		return fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	if err := x.QueryRow(ctx, `SELECT pg_backend_pid()`, simple).Scan(&pid2); err != nil {
		return fmt.Errorf("queuemax: connect to PostgreSQL: %w", err)
	}
	if pidY == pid1 || pid2 != pid1 {
		return ErrTransactionPooling
	}
	return nil
}
