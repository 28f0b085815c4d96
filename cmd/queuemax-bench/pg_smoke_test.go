package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRun_SmokePostgres runs every PostgreSQL scenario at a tiny scale.
// It skips when the server is unreachable, except in CI (CI=true).
func TestRun_SmokePostgres(t *testing.T) {
	t.Parallel()
	dsn := defaultDSN()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	conn, err := pgx.Connect(ctx, dsn)
	cancel()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s is unreachable in CI: %v", dsn, err)
		}
		t.Skipf("PostgreSQL at %s is unreachable (%v); set QUEUE_MAX_DSN; CI=true makes this a failure", dsn, err)
	}
	conn.Close(context.Background())
	out := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	args := []string{"-store", "postgres", "-dsn", dsn, "-scale", "0.002", "-json", out}
	if code := run(t.Context(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("run(%q) = %d, want %d; stdout:\n%s\nstderr:\n%s", args, code, exitOK, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if f := strings.Fields(r.Scenario); len(f) > 1 && f[0] == "pg" {
			seen[f[1]] = true
		}
	}
	for _, s := range pgScenarioNames {
		if !seen[s] {
			t.Errorf("report has no result for PostgreSQL scenario %q", s)
		}
	}
	if rep.Store != "postgres" || len(rep.Failures) > 0 {
		t.Errorf("report store %q, failures %q", rep.Store, rep.Failures)
	}
	// Every schema the run created is gone.
	conn, err = pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1",
		fmt.Sprintf("qmbench\\_%%\\_%d\\_%%", os.Getpid())).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d schemas of this run left behind", left)
	}
}
