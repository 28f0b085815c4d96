// Package queuemaxpg is queuemax's PostgreSQL store, a module of its own so
// that a program on the embedded SQLite store links no PostgreSQL driver.
// Open it and pass it to queuemax.Open:
//
//	st, err := queuemaxpg.Open(ctx, "postgres://app@db/app", queuemaxpg.Options{})
//	if err != nil { … }
//	c, err := queuemax.Open(ctx, queuemax.Config{Store: st, Handlers: tasks.Handlers()})
//
// The client owns the store from then on: Client.Close closes it, and so
// does an Open that fails. Leases, heartbeats, orphan recovery and retry
// times follow the database's clock, not the host's. See docs/postgres.md.
package queuemaxpg

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
)

// DefaultSchema is the schema used when Options.Schema is empty.
const DefaultSchema = pgstore.DefaultSchema

// MinConns is the smallest Options.MaxConns: the listener, the claim
// pool and the main pool need one connection each.
const MinConns = pgstore.MinConns

// Errors of the PostgreSQL store.
var (
	// ErrSchemaNewer is returned by Open when the schema was migrated by a
	// newer queuemax than this binary.
	ErrSchemaNewer = pgstore.ErrSchemaNewer
	// ErrCommitUnknown is returned (wrapped) by an enqueue whose insert
	// reached the server but whose answer was lost with the connection
	// (an immediate restart or crash of the server, a network failure):
	// the job may have been stored, and may even have run. Enqueues the
	// server provably did not run are retried by the store itself for up
	// to 15 s and never return it. See docs/postgres.md for how to check.
	ErrCommitUnknown = pgstore.ErrCommitUnknown
	// ErrTransactionPooling is returned by Open when the DSN reaches
	// PostgreSQL through a pooler in transaction or statement pooling mode
	// (pgbouncer's pool_mode = transaction); its message says what to
	// change. Session pooling works.
	ErrTransactionPooling = pgstore.ErrTransactionPooling
)

// Options configures the PostgreSQL store. Its zero value is the default.
type Options struct {
	// Schema is the schema holding queuemax's tables, so one database can
	// serve several applications. It is created if missing. Empty means
	// DefaultSchema (env QUEUE_MAX_SCHEMA).
	Schema string
	// MaxConns caps the connections to PostgreSQL the store opens in all:
	// its LISTEN session, its claim pool and its main pool (see
	// docs/postgres.md, Connection budget). Zero means the DSN's
	// pool_max_conns if it sets one, else 4, so 20 processes stay within
	// 80, under the server's default max_connections of 100. At least
	// MinConns.
	MaxConns int
	// ReadOnly opens an existing queue without creating, migrating or
	// changing anything, for inspection tools: every write returns
	// queuemax.ErrReadOnly.
	ReadOnly bool
}

// Open connects to the database dsn names (a postgres:// or postgresql://
// URL, or pgx's key=value settings), creates or migrates the queue's tables in o.Schema and returns the
// store, ready for queuemax.Config.Store. It keeps one listener goroutine
// until the store is closed. A DSN of another form or an out-of-range
// MaxConns is a *queuemax.ConfigError naming the field; an unreachable
// server is an error naming PostgreSQL.
func Open(ctx context.Context, dsn string, o Options) (queuemax.Store, error) {
	if err := checkDSN(dsn); err != nil {
		return nil, err
	}
	if o.MaxConns < 0 || o.MaxConns > 0 && o.MaxConns < pgstore.MinConns || o.MaxConns > 1<<20 {
		return nil, &queuemax.ConfigError{Field: "MaxConns", Msg: fmt.Sprintf("%d is out of range (want 0 for the default, or %d or more)", o.MaxConns, pgstore.MinConns)}
	}
	st, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, Schema: o.Schema, ReadOnly: o.ReadOnly, MaxConns: int32(o.MaxConns)})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// checkDSN accepts postgres:// and postgresql:// URLs and pgx's key=value
// form (host=a,b port=5432,5433 target_session_attrs=read-write …);
// anything else is a *queuemax.ConfigError naming DSN.
func checkDSN(dsn string) error {
	scheme, _, isURL := strings.Cut(dsn, "://")
	switch {
	case isURL && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")):
		return nil
	case isURL:
		return &queuemax.ConfigError{Field: "DSN", Msg: fmt.Sprintf("unsupported scheme %q (want postgres://, postgresql:// or key=value settings)", scheme)}
	case strings.Contains(dsn, "="):
		return nil // key=value settings; pgx names a bad one when Open parses them
	}
	return &queuemax.ConfigError{Field: "DSN", Msg: fmt.Sprintf("%q is neither a postgres:// URL nor key=value settings", dsn)}
}
