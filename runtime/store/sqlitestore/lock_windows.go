//go:build windows

package sqlitestore

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

const lockExcludes = true

// lockDir takes an exclusive lock on dir's lock file (LockFileEx on its
// first byte), waiting for other processes that hold it, and returns the
// function that releases it.
func lockDir(dir string, mode os.FileMode) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, fmt.Errorf("queuemax: data dir lock: %w", err)
	}
	h := windows.Handle(f.Fd())
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		f.Close()
		return nil, fmt.Errorf("queuemax: data dir lock: %w", err)
	}
	return func() {
		windows.UnlockFileEx(h, 0, 1, 0, ol)
		f.Close()
	}, nil
}
