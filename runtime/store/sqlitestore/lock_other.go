//go:build !unix && !windows

package sqlitestore

import "os"

const lockExcludes = false

// lockDir is a no-op where the platform has no file lock (see lockName).
func lockDir(string, os.FileMode) (func(), error) { return func() {}, nil }
