package limitcheck

import (
	"testing"
	"time"
)

func TestMaxOverlap(t *testing.T) {
	at := func(ms int) time.Time { return time.UnixMilli(int64(ms)) }
	// [0,10) [5,15) [10,20): at most two at once; an end and a start at
	// the same instant do not overlap.
	if got := MaxOverlap([]Span{{at(0), at(10)}, {at(5), at(15)}, {at(10), at(20)}}); got != 2 {
		t.Errorf("MaxOverlap = %d, want 2", got)
	}
}

func TestMaxInWindow(t *testing.T) {
	var ts []time.Time
	for _, ms := range []int{0, 100, 900, 1000, 1050} {
		ts = append(ts, time.UnixMilli(int64(ms)))
	}
	if got := MaxInWindow(ts, time.Second); got != 4 {
		t.Errorf("MaxInWindow = %d, want 4 (100, 900, 1000, 1050)", got)
	}
}
