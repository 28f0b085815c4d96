//go:build windows

package cputime

import (
	"time"

	"golang.org/x/sys/windows"
)

func process() (time.Duration, bool) {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0, false
	}
	// A FILETIME counts 100 ns intervals; for these two it is a duration.
	ticks := func(ft windows.Filetime) int64 { return int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100), true
}
