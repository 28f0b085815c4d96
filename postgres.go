package queuemax

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuemax/queuemax/runtime/store/pgstore"
)

// DefaultSchema is the PostgreSQL schema used when Config.Schema is empty.
const DefaultSchema = pgstore.DefaultSchema

// ErrSchemaNewer is returned by Open when the PostgreSQL schema was
// migrated by a newer queuemax than this binary.
var ErrSchemaNewer = pgstore.ErrSchemaNewer

// usesPostgres reports whether dsn selects the PostgreSQL store. An empty
// DSN selects SQLite; any scheme other than postgres:// or postgresql://
// is a *ConfigError naming DSN.
func usesPostgres(dsn string) (bool, error) {
	if dsn == "" {
		return false, nil
	}
	scheme, _, ok := strings.Cut(dsn, "://")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		if ok {
			return true, nil
		}
	}
	if !ok {
		scheme = ""
	}
	return false, &ConfigError{"DSN", fmt.Sprintf("unsupported scheme %q (want postgres:// or postgresql://, or leave DSN empty for SQLite)", scheme)}
}

// openPostgres opens the PostgreSQL store named by cfg.DSN in cfg.Schema.
// Leases, heartbeats, orphan recovery and retry times then follow the
// database's clock, not this host's.
func openPostgres(ctx context.Context, cfg Config) (*pgstore.Store, error) {
	if cfg.MaxConns < 0 || cfg.MaxConns > 0 && cfg.MaxConns < pgstore.MinConns || cfg.MaxConns > 1<<20 {
		return nil, &ConfigError{"MaxConns", fmt.Sprintf("%d is out of range (want 0 for the default, or %d or more)", cfg.MaxConns, pgstore.MinConns)}
	}
	st, err := pgstore.Open(ctx, pgstore.Options{DSN: cfg.DSN, Schema: cfg.Schema, ReadOnly: cfg.ReadOnly, MaxConns: int32(cfg.MaxConns)})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// ErrCommitUnknown is returned (wrapped) by an enqueue on PostgreSQL whose
// insert reached the server but whose answer was lost with the connection
// (an immediate restart or crash of the server, a network failure): the
// job may have been stored, and may even have run. Enqueues the server
// provably did not run are retried by the store itself for up to 15 s
// and never return it. See docs/postgres.md for how to check.
var ErrCommitUnknown = pgstore.ErrCommitUnknown

// ErrTransactionPooling is returned by Open when Config.DSN reaches
// PostgreSQL through a pooler in transaction or statement pooling mode
// (pgbouncer's pool_mode = transaction); its message says what to change.
// Session pooling works.
var ErrTransactionPooling = pgstore.ErrTransactionPooling
