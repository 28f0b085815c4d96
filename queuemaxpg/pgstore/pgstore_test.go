package pgstore_test

import (
	"testing"

	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

// testDSN and freshSchema: see internal/pgtest.
func testDSN(t testing.TB) string                 { return pgtest.DSN(t) }
func freshSchema(t testing.TB, dsn string) string { return pgtest.Schema(t, dsn) }

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
