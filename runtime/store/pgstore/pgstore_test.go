package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/pgstore"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

// testDSN returns the DSN of the test database, skipping the test when it
// is unreachable outside CI and failing it in CI.
func testDSN(t testing.TB) string {
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

// freshSchema returns a new schema name, dropped when the test ends.
func freshSchema(t testing.TB, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "qmtest_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

func open(t testing.TB, o pgstore.Options) *pgstore.Store {
	t.Helper()
	if o.DSN == "" {
		o.DSN = testDSN(t)
	}
	if o.Schema == "" {
		o.Schema = freshSchema(t, o.DSN)
	}
	if o.MaxConns == 0 {
		o.MaxConns = 4
	}
	st, err := pgstore.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformance(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	storetest.Run(t, func(t *testing.T, shards int) store.Store {
		return open(t, pgstore.Options{DSN: dsn, Shards: shards, HostClock: true})
	})
}
