//go:build unix

package sqlitestore

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMigrateLayout_KilledMidway kills a migration with SIGKILL while it
// holds shard 1's transaction open (shard 0 moved, shards 1 and 2 not):
// the directory is refused as half migrated, its files read as before, and
// running the migration again finishes it with the same jobs.
func TestMigrateLayout_KilledMidway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := openLayout(t, dir, 3, LayoutQueueMax)
	if err != nil {
		t.Fatal(err)
	}
	fillLayoutDir(t, st)
	before := snapshotDir(t, st)
	st.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateLayout_Child$", "-test.count=1")
	cmd.Env = append(os.Environ(), "QUEUEMAX_MIGRATE_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: err = %v, want killed by SIGKILL; output:\n%s", err, out)
	}

	_, err = openLayout(t, dir, 0, "")
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "half migrated (shards 0 native, shards 1,2 queue-max)") {
		t.Fatalf("Open of the half-migrated directory: err = %v, want ErrLayout naming the shards", err)
	}
	res, err := MigrateLayout(t.Context(), Options{Dir: dir}, LayoutNative)
	if err != nil {
		t.Fatalf("MigrateLayout again: %v", err)
	}
	if !slices.Equal(res.Already, []int{0}) || !slices.Equal(res.Converted, []int{1, 2}) {
		t.Errorf("MigrateLayout again = %+v, want shard 0 already moved, 1 and 2 converted", res)
	}
	st, err = openLayout(t, dir, 0, LayoutNative)
	if err != nil {
		t.Fatalf("Open after the rerun: %v", err)
	}
	if diff := cmp.Diff(before, snapshotDir(t, st)); diff != "" {
		t.Errorf("after the killed and rerun move (-before +after):\n%s", diff)
	}
}

// TestMigrateLayout_Child is the process TestMigrateLayout_KilledMidway
// kills: it moves the directory to the native layout and SIGKILLs itself
// just before shard 1 commits.
func TestMigrateLayout_Child(t *testing.T) {
	dir := os.Getenv("QUEUEMAX_MIGRATE_CHILD")
	if dir == "" {
		t.Skip("run by TestMigrateLayout_KilledMidway")
	}
	_, err := migrateLayout(t.Context(), Options{Dir: dir}, LayoutNative, func(shard int, step string) {
		if shard == 1 && step == "commit" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal ends the process
		}
	})
	t.Fatalf("the migration returned (%v) instead of being killed", err)
}
