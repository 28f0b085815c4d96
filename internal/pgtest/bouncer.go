package pgtest

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Bouncer starts a pgbouncer in pool mode mode ("session", "transaction"
// or "statement") in front of the server and database of dsn, stopped
// when the test ends, and returns the DSN that reaches the database
// through it. Without pgbouncer installed (.ci/run installs Debian's) the
// test is skipped outside CI and failed in CI.
func Bouncer(t testing.TB, dsn, mode string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr == nil {
			bin, err = "/usr/sbin/pgbouncer", nil
		}
	}
	if err != nil {
		unavailable(t, "pgbouncer is not installed (apt-get install pgbouncer): %v", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("DSN %q: %v", dsn, err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	db := filepath.Base(u.Path)
	userName := u.User.Username()
	dir, err := os.MkdirTemp("", "qmbouncer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	listen := freePort(t)
	conf := fmt.Sprintf(`[databases]
%[1]s = host=%[2]s port=%[3]s dbname=%[1]s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %[4]d
unix_socket_dir =
auth_type = trust
auth_file = %[5]s/userlist.txt
pool_mode = %[6]s
max_client_conn = 500
default_pool_size = 40
ignore_startup_parameters = extra_float_digits
logfile = %[5]s/pgbouncer.log
pidfile = %[5]s/pgbouncer.pid
`, db, host, port, listen, dir, mode)
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(fmt.Sprintf("%q \"\"\n", userName)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	if os.Geteuid() == 0 {
		// pgbouncer refuses to run as root.
		pu, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, "running as root and there is no postgres user to run pgbouncer as: %v", err)
		}
		uid, _ := strconv.Atoi(pu.Uid)
		gid, _ := strconv.Atoi(pu.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("runuser", "-u", "postgres", "--", bin, filepath.Join(dir, "pgbouncer.ini"))
	}
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		out.Close()
	})
	b := *u
	b.Host = fmt.Sprintf("127.0.0.1:%d", listen)
	through := b.String()
	deadline := time.Now().Add(20 * time.Second)
	for !ready(through) {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			so, _ := os.ReadFile(filepath.Join(dir, "stdout"))
			t.Fatalf("pgbouncer on port %d not ready:\n%s\n%s", listen, log, so)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return through
}
