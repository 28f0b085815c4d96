package queuemax

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// The PostgreSQL cases of this package's tests. The PostgreSQL store is a
// module of its own (queuemaxpg), which this module does not require, so
// they skip here; queuemaxpg's TestRootPackage runs this package's tests
// with the store linked in: its testdata/rootpkg adds the PostgreSQL-only
// test files and one that sets pgHook.
var pgHook struct {
	// DSN returns the test database's DSN (skipping when unreachable),
	// Schema a fresh schema dropped after the test, Exec runs a statement.
	DSN    func(testing.TB) string
	Schema func(testing.TB, string) string
	Exec   func(testing.TB, string, string, ...any)
	// Open opens the PostgreSQL store.
	Open func(ctx context.Context, dsn, schema string, maxConns int) (Store, error)
	// ChildMain runs the PostgreSQL-only child process modes (see
	// process_test.go); ok is false for a mode it does not know.
	ChildMain func(ctx context.Context, mode, dir string, say func(string, ...any)) (code int, ok bool)
}

const pgSkip = "the PostgreSQL store is not linked into this test binary (its module, queuemaxpg, runs these cases: go test -run TestOverlaid ./queuemaxpg)"

func pgTestDSN(t testing.TB) string {
	t.Helper()
	if pgHook.DSN == nil {
		t.Skip(pgSkip)
	}
	return pgHook.DSN(t)
}

func pgTestSchema(t testing.TB, dsn string) string { t.Helper(); return pgHook.Schema(t, dsn) }

func pgExec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	pgHook.Exec(t, dsn, sql, args...)
}

// pgTarget names a PostgreSQL queue in a test's Config.Store: setup (and
// pgConfig) open a store of its own from it for each client, as separate
// processes would. It is no store itself.
type pgTarget struct {
	store.Store // nil
	dsn, schema string
}

// newPGTarget returns a target on a fresh schema of the test database.
func newPGTarget(t testing.TB) *pgTarget {
	t.Helper()
	dsn := pgTestDSN(t)
	return &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}
}

// pgTargetOf returns the target in cfg.Store, or nil.
func pgTargetOf(cfg Config) *pgTarget {
	pt, _ := cfg.Store.(*pgTarget)
	return pt
}

// pgConfig returns cfg with a store of its own opened for a target in
// cfg.Store; other configs are returned as they are.
func pgConfig(t testing.TB, cfg Config) Config {
	t.Helper()
	if pt := pgTargetOf(cfg); pt != nil {
		cfg.Store = pgTestStore(t, pt.dsn, pt.schema)
	}
	return cfg
}

// pgTestStore opens the PostgreSQL store of dsn in schema.
func pgTestStore(t testing.TB, dsn, schema string) Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := pgHook.Open(ctx, dsn, schema, 0)
	if err != nil {
		t.Fatalf("open the PostgreSQL store: %v", err)
	}
	return st
}

// childConfig is cfg on the queue a child process of a test opens: the
// PostgreSQL queue its parent named in the environment (pgEnv), else the
// data directory dir with shards.
func childConfig(dir string, shards int, cfg Config) Config {
	dsn := os.Getenv(childDSNEnv)
	if dsn == "" {
		cfg.Dir, cfg.Shards = dir, shards
		return cfg
	}
	if pgHook.Open == nil {
		panic(pgSkip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := pgHook.Open(ctx, dsn, os.Getenv(childSchemaEnv), 0)
	if err != nil {
		panic(fmt.Sprintf("child: open the PostgreSQL store: %v", err))
	}
	cfg.Store = st
	return cfg
}

// PGTestConfigs returns, for the external tests, a function that returns
// a Config on a store of its own over one fresh schema of the test
// database, a client (process) each (skipping as pgTestDSN).
func PGTestConfigs(t *testing.T) func() Config {
	t.Helper()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	return func() Config { return Config{Store: pgTestStore(t, dsn, schema)} }
}

// pgEnv is the environment that makes a child process open the queue of
// dsn and schema (see childConfig).
func pgEnv(dsn, schema string) []string {
	return []string{childDSNEnv + "=" + dsn, childSchemaEnv + "=" + schema}
}
