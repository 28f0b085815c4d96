package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a PostgreSQL server of a test's own, in a temporary
// directory on a free port: tests that restart or stop their server use
// one, so that the machine's shared server (and the tests running on it
// meanwhile) is never disturbed.
type Cluster struct {
	DSN  string // postgres://postgres@127.0.0.1:<port>/postgres
	Port int

	t     testing.TB
	bin   string
	data  string
	log   string
	owner string // the user the server runs as ("" when it is us)
	mu    sync.Mutex
}

// NewCluster creates and starts a private server (initdb, then pg_ctl
// start; settings are extra -c name=value settings), stopped and removed
// when the test ends. Without PostgreSQL's server programs the test is
// skipped outside CI and failed in CI, as DSN does.
func NewCluster(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bin, err := serverBin()
	if err != nil {
		unavailable(t, "PostgreSQL's server programs (initdb, pg_ctl) are not installed: %v", err)
	}
	dir, err := os.MkdirTemp("", "qmpg")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, data: filepath.Join(dir, "data"), log: filepath.Join(dir, "log")}
	if os.Geteuid() == 0 {
		// The server refuses to run as root: run it as postgres.
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, "running as root and there is no postgres user to run a private server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.owner = "postgres"
	}
	t.Cleanup(func() {
		c.pgctl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	if out, err := c.cmd(filepath.Join(bin, "initdb"), "-D", c.data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.Port = freePort(t)
	opts := []string{"-p", strconv.Itoa(c.Port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "max_connections=200"}
	for _, s := range settings {
		opts = append(opts, "-c", s)
	}
	if out, err := c.pgctl("start", "-w", "-t", "60", "-o", strings.Join(opts, " ")); err != nil {
		log, _ := os.ReadFile(c.log)
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	return c
}

// Restart restarts the server in mode "fast" (sessions are ended, then a
// clean shutdown) or "immediate" (the server stops at once and recovers
// from its WAL at start, as after a crash), and returns once it accepts
// connections again.
func (c *Cluster) Restart(mode string) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if out, err := c.pgctl("restart", "-w", "-t", "60", "-m", mode); err != nil {
		log, _ := os.ReadFile(c.log)
		c.t.Fatalf("pg_ctl restart -m %s: %v\n%s\n%s", mode, err, out, log)
	}
}

// Exec runs one statement on the cluster's database.
func (c *Cluster) Exec(sql string, args ...any) { Exec(c.t, c.DSN, sql, args...) }

func (c *Cluster) pgctl(args ...string) ([]byte, error) {
	args = append([]string{"-D", c.data, "-l", c.log}, args...)
	return c.cmd(filepath.Join(c.bin, "pg_ctl"), args...).CombinedOutput()
}

func (c *Cluster) cmd(name string, args ...string) *exec.Cmd {
	if c.owner != "" {
		return exec.Command("runuser", append([]string{"-u", c.owner, "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

// serverBin finds the directory of initdb and pg_ctl: pg_config's
// bindir, else Debian's newest /usr/lib/postgresql/*/bin.
func serverBin() (string, error) {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	deb, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(deb) - 1; i >= 0; i-- {
		dirs = append(dirs, deb[i])
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("no initdb and pg_ctl in %v", dirs)
}

// freePort returns a TCP port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// unavailable skips the test outside CI and fails it in CI.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (in CI this fails)", args...)
}

// ready reports whether dsn accepts a connection within a second.
func ready(dsn string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false
	}
	conn.Close(context.Background())
	return true
}

// WaitReady waits until dsn accepts a connection, for at most d.
func WaitReady(t testing.TB, dsn string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v: %v", dsn, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
