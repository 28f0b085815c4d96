// Package cputime reads the CPU time the current process has used, for the
// benchmarks' cpu-ns/job figures, on every platform the module builds for.
package cputime

import "time"

// Process returns the user plus system CPU time the process has used so
// far. ok is false where the platform offers no such figure (anything
// but Unix and Windows); Process then returns 0.
func Process() (d time.Duration, ok bool) { return process() }
