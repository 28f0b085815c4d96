// Package pgtest gives the project's tests their PostgreSQL database: the
// DSN (QUEUEMAX_TEST_PG_DSN, default the machine's local test database),
// skipped with the reason when the server is unreachable outside CI and
// failed in CI (CI=true), and a fresh schema per test, dropped after it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable that overrides DefaultDSN.
const EnvDSN = "QUEUEMAX_TEST_PG_DSN"

// DefaultDSN is the local test database of this project's machines.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// DSN returns the test database's DSN once a connection to it succeeds. An
// unreachable server skips the test, saying why, unless CI is "true": then
// it fails the test.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		dsn = DefaultDSN
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s is unreachable in CI: %v", dsn, err)
		}
		t.Skipf("PostgreSQL at %s is unreachable (set %s; in CI this fails): %v", dsn, EnvDSN, err)
	}
	conn.Close(context.Background())
	return dsn
}

// Schema returns a fresh schema name (qmtest_ and 12 hex digits); the
// schema, if the test created it, is dropped with everything in it when the
// test ends.
func Schema(t testing.TB, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "qmtest_" + hex.EncodeToString(b)
	t.Cleanup(func() { Exec(t, dsn, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE") })
	return name
}

// Exec runs one statement on a connection of its own, failing the test on
// an error.
func Exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("connect: %v", err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}
