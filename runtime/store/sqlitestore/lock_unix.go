//go:build unix

package sqlitestore

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

const lockExcludes = true

// lockDir takes an exclusive lock on dir's lock file, waiting for other
// processes that hold it, and returns the function that releases it.
func lockDir(dir string, mode os.FileMode) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, fmt.Errorf("queuemax: data dir lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("queuemax: data dir lock: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
