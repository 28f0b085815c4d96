//go:build !unix

package sqlitestore

import "os"

// lockDir is a no-op where flock is not available.
func lockDir(string, os.FileMode) (func(), error) { return func() {}, nil }
