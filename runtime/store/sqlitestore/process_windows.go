//go:build windows

package sqlitestore

import (
	"errors"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not exited (STILL_ACTIVE).
const stillActive = 259

// processGone reports whether no process with id pid runs on this host:
// OpenProcess refuses an id that names no process with
// ERROR_INVALID_PARAMETER, and a process that exited while something
// still holds a handle to it reports an exit code other than STILL_ACTIVE.
// Any other failure (access denied: another user's process) counts as
// alive.
func processGone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code != stillActive
}
