//go:build unix

package sqlitestore

import (
	"errors"
	"syscall"
)

// processGone reports whether no process with id pid exists on this host:
// signal 0 checks for it without sending anything.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
