package queuemax

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgTestDSN returns the test database's DSN, skipping the test when it is
// unreachable outside CI and failing it in CI.
func pgTestDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("QUEUEMAX_TEST_PG_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s is unreachable in CI: %v", dsn, err)
		}
		t.Skipf("PostgreSQL at %s is unreachable (set QUEUEMAX_TEST_PG_DSN; in CI this fails): %v", dsn, err)
	}
	conn.Close(context.Background())
	return dsn
}

// pgTestSchema returns a fresh schema name, dropped when the test ends.
func pgTestSchema(t *testing.T, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "qmtest_" + hex.EncodeToString(b)
	t.Cleanup(func() { pgExec(t, dsn, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE") })
	return name
}

// pgExec runs one statement on a connection of its own.
func pgExec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Errorf("connect: %v", err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}

func TestPostgres_RunsJobsLikeSQLite(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	h := DefineResult("t.Echo", TaskOptions{}, func(_ context.Context, a echoArgs) (int, error) { return a.N * 2, nil })
	b := setup(t, Config{DSN: dsn, Schema: schema, Shards: 6, Handlers: []Handler{h}})
	if b.c.Shards() != 1 {
		t.Errorf("Shards() = %d, want 1 (one logical shard on PostgreSQL)", b.c.Shards())
	}
	evs := collect(b.c, EventCompleted)
	stop := run(t, b.c)
	defer stop()
	// Enqueued after Run started: the idle worker must be woken.
	id, err := b.c.Enqueue(b.ctx, "t.Echo", echoArgs{21}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	waitEvents(t, evs, 1)
	stop()
	j, err := b.c.Job(b.ctx, id)
	if err != nil || j.Status != StatusCompleted || string(j.Result) != "42" {
		t.Errorf("job = %+v, %v; want completed with 42", j, err)
	}
	var tables int
	conn, err := pgx.Connect(b.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(b.ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, schema).Scan(&tables); err != nil || tables == 0 {
		t.Errorf("tables in schema %s = %d, %v; want the queue's tables there", schema, tables, err)
	}
}

func TestPostgres_DSNScheme(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"mysql://localhost/db", "sqlite:///tmp/x", "localhost:5432"} {
		_, err := Open(t.Context(), Config{DSN: dsn})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "DSN" || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Open(DSN %q) = %v, want a *ConfigError naming DSN", dsn, err)
		}
	}
	// A PostgreSQL URL that cannot be reached fails in Open, naming it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := Open(ctx, Config{DSN: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"})
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("Open(unreachable) = %v, want a connection error", err)
	}
}
