package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/pgtest"
)

// run runs the queuemax command line in this process with args and env
// (KEY=value pairs; nothing else of the environment is read).
func run(t *testing.T, ctx context.Context, stdout io.Writer, env []string, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	p := program()
	p.Stdin, p.Stdout, p.Stderr = strings.NewReader(""), stdout, &stderr
	p.Getenv = func(k string) string {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}
	return p.Run(ctx, args), stderr.String()
}

func TestPostgresDSN(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	flags := []string{"--dsn", dsn, "--schema", schema}
	// A read-only command on a schema that holds no queue says so.
	code, stderr := run(t, t.Context(), io.Discard, nil, append([]string{"list"}, flags...)...)
	if code == 0 || !strings.Contains(stderr, "holds no queue") {
		t.Errorf("list on a missing schema: exit %d, stderr %q; want a 'holds no queue' error", code, stderr)
	}
	if code, stderr := run(t, t.Context(), io.Discard, nil, append([]string{"enqueue", "--any-task", "--task", "t.A", "--payload", `{"n":1}`}, flags...)...); code != 0 {
		t.Fatalf("enqueue --dsn: exit %d, %s", code, stderr)
	}
	// The environment works as the flags do; its SQLite settings do not
	// apply to the PostgreSQL store.
	env := []string{"QUEUE_MAX_DSN=" + dsn, "QUEUE_MAX_SCHEMA=" + schema, "DATA_DIR=/nonexistent", "NUM_SHARDS=3",
		"DB_BUSY_TIMEOUT=100", "CACHE_SIZE=20", "MMAP_SIZE=0"}
	if code, stderr := run(t, t.Context(), io.Discard, env, "enqueue", "--any-task", "--task", "t.B"); code != 0 {
		t.Fatalf("enqueue with QUEUE_MAX_DSN: exit %d, %s", code, stderr)
	}
	var out bytes.Buffer
	if code, stderr := run(t, t.Context(), &out, nil, append([]string{"list", "--json"}, flags...)...); code != 0 {
		t.Fatalf("list --dsn: exit %d, %s", code, stderr)
	}
	var jobs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &jobs); err != nil || len(jobs) != 2 {
		t.Fatalf("list --dsn = %d jobs (%v), want 2: %s", len(jobs), err, out.String())
	}
	code, stderr = run(t, t.Context(), io.Discard, nil, "list", "--dsn", "mysql://x/y")
	if code == 0 || !strings.Contains(stderr, "DSN") {
		t.Errorf("list --dsn mysql://: exit %d, stderr %q; want an error naming DSN", code, stderr)
	}
}

// TestPostgresDashboardBanner: the dashboard names the PostgreSQL queue it
// serves (no data dir, no credentials).
func TestPostgresDashboardBanner(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	if code, stderr := run(t, t.Context(), io.Discard, nil, "--dsn", dsn, "--schema", schema, "enqueue", "--any-task", "--task", "t.A"); code != 0 {
		t.Fatalf("enqueue --dsn: exit %d, %s", code, stderr)
	}
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code, _ := run(t, ctx, pw, nil, "--dsn", dsn, "--schema", schema, "dashboard", "--addr", "127.0.0.1:0")
		pw.Close()
		done <- code
	}()
	var banner strings.Builder
	buf := make([]byte, 4096)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(banner.String(), "/ui/") && time.Now().Before(deadline) {
		n, err := pr.Read(buf)
		banner.Write(buf[:n])
		if err != nil {
			break
		}
	}
	cancel()
	go io.Copy(io.Discard, pr)
	<-done
	if b := banner.String(); !strings.Contains(b, "PostgreSQL ") || !strings.Contains(b, "schema "+schema) || strings.Contains(b, "data dir") {
		t.Errorf("dashboard banner %q, want the PostgreSQL target and schema %s", b, schema)
	}
}
