//go:build !unix && !windows

package sqlitestore

// processGone reports false: these platforms offer no check of another
// process, so a batch whose producer died is recovered only once it is
// older than stagedTimeout.
func processGone(int) bool { return false }
