package sqlitestore

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestProcessGone checks the liveness check batch recovery relies on, on
// every platform: this process exists, and a child that exited and was
// waited for does not (on platforms without a check, processGone always
// answers false and recovery waits stagedTimeout instead).
func TestProcessGone(t *testing.T) {
	t.Parallel()
	if processGone(os.Getpid()) {
		t.Fatal("processGone(own pid) = true")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v", err)
	}
	pid := cmd.Process.Pid
	switch runtime.GOOS {
	case "plan9", "js", "wasip1":
		if processGone(pid) {
			t.Fatalf("processGone(%d) = true on %s, which has no check", pid, runtime.GOOS)
		}
	default:
		if !processGone(pid) {
			t.Fatalf("processGone(%d) = false for a child that exited", pid)
		}
	}
}

// TestLockDir_Excludes checks that a second lockDir on the same directory
// waits for the first to release (on Unix and Windows; elsewhere lockDir
// takes no lock, as lockName documents).
func TestLockDir_Excludes(t *testing.T) {
	t.Parallel()
	if !lockSupported {
		t.Skipf("no file lock on %s", runtime.GOOS)
	}
	dir := t.TempDir()
	unlock, err := lockDir(dir, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := lockDir(dir, 0o600)
		if err != nil {
			t.Error(err)
			u = func() {}
		}
		got <- u
	}()
	select {
	case u := <-got:
		u()
		unlock()
		t.Fatal("a second lockDir returned while the first held the lock")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(time.Minute):
		t.Fatal("the second lockDir did not return within a minute of the unlock")
	}
}
