// Package clock is the host clock the root package reads by default
// (Config's clock): time.Now, shifted by Offset. Only tests set Offset, to
// run a process whose clock is off (a time namespace or libfaketime do not
// reach a Go binary's clock); a program never does.
package clock

import (
	"sync/atomic"
	"time"
)

var offset atomic.Int64

// SetOffset makes Now run d ahead (or behind, when negative) of time.Now.
func SetOffset(d time.Duration) { offset.Store(int64(d)) }

// Now returns time.Now shifted by the offset.
func Now() time.Time {
	t := time.Now()
	if d := offset.Load(); d != 0 {
		return t.Add(time.Duration(d))
	}
	return t
}
