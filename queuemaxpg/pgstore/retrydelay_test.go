package pgstore_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
	"github.com/queuemax/queuemax/runtime/store"
)

// TestMigrate16_RetryDelayMillis: rows written before version 16 kept
// retry_delay in seconds; the migration converts them, so a job keeps its
// backoff base.
func TestMigrate16_RetryDelayMillis(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	st := open(t, pgstore.Options{DSN: dsn})
	p := job(time.Now())
	p.RetryDelay = 1500 * time.Millisecond
	ids, err := st.Insert(t.Context(), []store.InsertParams{p})
	if err != nil {
		t.Fatal(err)
	}
	// Back to version 15: the row as a version-15 binary wrote it (the
	// later migrations run again too).
	jobs, versions := pgx.Identifier{st.Schema(), "jobs"}.Sanitize(), pgx.Identifier{st.Schema(), "schema_version"}.Sanitize()
	for _, q := range []string{`UPDATE ` + jobs + ` SET retry_delay = 2`, `DELETE FROM ` + versions + ` WHERE version >= 16`} {
		if _, err := st.Pool().Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	again, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: st.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if j, err := again.Job(t.Context(), ids[0]); err != nil || j.RetryDelay != 2*time.Second {
		t.Errorf("after the migration: RetryDelay %v, %v; want the row's 2 s", j.RetryDelay, err)
	}
}
