package cli_test

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/queuemax/queuemax/internal/pgtest"
)

func TestPostgresDSN(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	flags := []string{"--dsn", dsn, "--schema", schema}
	// A read-only command on a schema that holds no queue says so.
	res := qm(t, append([]string{"list"}, flags...)...)
	if res.code == 0 || !strings.Contains(res.stderr, "holds no queue") {
		t.Errorf("list on a missing schema: exit %d, stderr %q; want a 'holds no queue' error", res.code, res.stderr)
	}
	ok(t, qm(t, append([]string{"enqueue", "--any-task", "--task", "t.A", "--payload", `{"n":1}`}, flags...)...), "enqueue --dsn")
	// The environment works as the flags do.
	ok(t, invocation{bin: queuemaxBin, args: []string{"enqueue", "--any-task", "--task", "t.B"},
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

// TestPostgresDashboardBanner: the dashboard names the PostgreSQL queue it
// serves (no data dir, no credentials).
func TestPostgresDashboardBanner(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	ok(t, qm(t, "--dsn", dsn, "--schema", schema, "enqueue", "--any-task", "--task", "t.A"), "enqueue --dsn")
	cmd := exec.Command(queuemaxBin, "--dsn", dsn, "--schema", schema, "dashboard", "--addr", "127.0.0.1:0")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := collect(stdout)
	out.waitFor(t, "/ui/")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-out.done
	cmd.Wait()
	banner := out.text()
	if !strings.Contains(banner, "PostgreSQL ") || !strings.Contains(banner, "schema "+schema) || strings.Contains(banner, "data dir") {
		t.Errorf("dashboard banner %q, want the PostgreSQL target and schema %s", banner, schema)
	}
}
