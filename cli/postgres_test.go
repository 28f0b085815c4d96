package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

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

func TestPostgresDSN(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "qmtest_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	flags := []string{"--dsn", dsn, "--schema", schema}
	// A read-only command on a schema that holds no queue says so.
	res := qm(t, append([]string{"list"}, flags...)...)
	if res.code == 0 || !strings.Contains(res.stderr, "holds no queue") {
		t.Errorf("list on a missing schema: exit %d, stderr %q; want a 'holds no queue' error", res.code, res.stderr)
	}
	ok(t, qm(t, append([]string{"enqueue", "--task", "t.A", "--payload", `{"n":1}`}, flags...)...), "enqueue --dsn")
	// The environment works as the flags do.
	ok(t, invocation{bin: queuemaxBin, args: []string{"enqueue", "--task", "t.B"},
		env: []string{"QUEUE_MAX_DSN=" + dsn, "QUEUE_MAX_SCHEMA=" + schema}}.run(t), "enqueue with QUEUE_MAX_DSN")
	jobs := listJobs(t, queuemaxBin, append([]string{"list"}, flags...)...)
	if len(jobs) != 2 {
		t.Fatalf("list --dsn = %d jobs, want 2: %v", len(jobs), jobs)
	}
	res = qm(t, "list", "--dsn", "mysql://x/y")
	if res.code == 0 || !strings.Contains(res.stderr, "DSN") {
		t.Errorf("list --dsn mysql://: exit %d, stderr %q; want an error naming DSN", res.code, res.stderr)
	}
}
