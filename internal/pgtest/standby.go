package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewStandby makes a streaming standby of primary (pg_basebackup -R, so
// it follows primary's WAL from the start) and starts it on a free port
// with settings (extra -c name=value settings; e.g. a primary_conninfo
// through a proxy). The standby accepts read-only sessions; Promote makes
// it a primary. It is stopped and removed when the test ends.
func NewStandby(t testing.TB, primary *Cluster, settings ...string) *Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "qmpg")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: primary.bin, data: filepath.Join(dir, "data"), log: filepath.Join(dir, "log"), owner: primary.owner}
	if c.owner != "" {
		if out, err := exec.Command("chown", c.owner, dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		c.pgctl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	host, port := "127.0.0.1", strconv.Itoa(primary.Port)
	if out, err := c.cmd(filepath.Join(c.bin, "pg_basebackup"), "-h", host, "-p", port, "-U", "postgres",
		"-D", c.data, "-R", "-X", "stream", "-c", "fast", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	c.Port = freePort(t)
	opts := []string{"-p", strconv.Itoa(c.Port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "max_connections=200", "-c", "hot_standby=on"}
	for _, s := range settings {
		opts = append(opts, "-c", s)
	}
	if out, err := c.pgctl("start", "-w", "-t", "60", "-o", strings.Join(opts, " ")); err != nil {
		log, _ := os.ReadFile(c.log)
		t.Fatalf("pg_ctl start (standby): %v\n%s\n%s", err, out, log)
	}
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	return c
}

// Stop stops the server in mode "fast" or "immediate" (at once, as a
// host that dies: no shutdown checkpoint, sessions cut).
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if out, err := c.pgctl("stop", "-w", "-t", "60", "-m", mode); err != nil {
		c.t.Fatalf("pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
}

// Promote promotes a standby (pg_ctl promote) and returns once it
// accepts writes.
func (c *Cluster) Promote() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if out, err := c.pgctl("promote", "-w", "-t", "60"); err != nil {
		log, _ := os.ReadFile(c.log)
		c.t.Fatalf("pg_ctl promote: %v\n%s\n%s", err, out, log)
	}
	WaitReadOnly(c.t, c.DSN, false)
}

// WaitReadOnly waits (up to a minute) until new sessions on dsn are
// read-only (ro) or writable (!ro): SHOW transaction_read_only, as
// target_session_attrs=read-write asks it.
func WaitReadOnly(t testing.TB, dsn string, ro bool) {
	t.Helper()
	want := map[bool]string{true: "on", false: "off"}[ro]
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var got string
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = conn.QueryRow(ctx, `SHOW transaction_read_only`).Scan(&got)
			conn.Close(context.Background())
		}
		cancel()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: transaction_read_only is %q after a minute, want %s (%v)", dsn, got, want, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ExecReadWrite runs one statement in a session that overrides the
// server's default_transaction_read_only (as an operator lifting a fence
// would).
func ExecReadWrite(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SET default_transaction_read_only = off`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
