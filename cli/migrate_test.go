package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateLayouts: --queue-max-compatible creates a directory in the
// queue-max layout and refuses a native one; migrate moves a directory
// both ways, its jobs kept, and says so when there is nothing to do.
func TestMigrateLayouts(t *testing.T) {
	t.Parallel()
	native := newQueue(t, 2)
	compat := filepath.Join(t.TempDir(), "compat")
	qmc := func(dir string, args ...string) []string {
		return append([]string{"--data-dir", dir, "--queue-max-compatible"}, args...)
	}
	ok(t, qm(t, qmc(compat, "enqueue", "--create", "--any-task", "--task", "t.A")...), "enqueue --queue-max-compatible")
	ok(t, qm(t, qmc(compat, "stats")...), "stats --queue-max-compatible on the queue-max layout")
	ok(t, qm(t, "--data-dir", compat, "stats"), "stats on the queue-max layout without the flag")
	wantFail(t, qm(t, qmc(native, "stats")...), 1, native, "native layout", "queuemax migrate --to-queue-max "+native)

	out := ok(t, qm(t, "migrate", "--to-native", compat), "migrate --to-native").stdout
	if !strings.Contains(out, "moved data dir "+compat+" to the native layout (") {
		t.Errorf("migrate --to-native printed %q", out)
	}
	wantFail(t, qm(t, qmc(compat, "stats")...), 1, compat, "native layout")
	if jobs := listJobs(t, queuemaxBin, "--data-dir", compat, "list"); len(jobs) != 1 {
		t.Errorf("after migrate --to-native: %d jobs, want 1", len(jobs))
	}
	out = ok(t, qm(t, "--data-dir", compat, "migrate", "--to-native"), "migrate --to-native again").stdout
	if !strings.Contains(out, "is in the native layout already") {
		t.Errorf("migrate --to-native again printed %q", out)
	}
	ok(t, qm(t, "migrate", compat, "--to-queue-max"), "migrate --to-queue-max")
	ok(t, qm(t, qmc(compat, "stats")...), "stats --queue-max-compatible after migrate --to-queue-max")

	wantFail(t, qm(t, "migrate", compat), 2, "--to-native", "--to-queue-max")
	wantFail(t, qm(t, "migrate", "--to-native", filepath.Join(compat, "nope")), 1, "does not exist")
}
