// Package limitcheck holds the checks the tests of global and queue limits
// share, in the root package and in runtime/engine: how many runs
// overlapped, and whether the starts kept to a rate.
package limitcheck

import (
	"sort"
	"testing"
	"time"
)

// Span is one execution as its handler saw it.
type Span struct{ Start, End time.Time }

// MaxOverlap returns the most spans running at one instant.
func MaxOverlap(spans []Span) int {
	type ev struct {
		t time.Time
		d int
	}
	evs := make([]ev, 0, 2*len(spans))
	for _, s := range spans {
		evs = append(evs, ev{s.Start, 1}, ev{s.End, -1})
	}
	// An end and a start at the same instant do not overlap.
	sort.Slice(evs, func(i, j int) bool {
		if !evs[i].t.Equal(evs[j].t) {
			return evs[i].t.Before(evs[j].t)
		}
		return evs[i].d < evs[j].d
	})
	n, most := 0, 0
	for _, e := range evs {
		n += e.d
		most = max(most, n)
	}
	return most
}

// MaxInWindow returns the most times within any window of length w.
func MaxInWindow(ts []time.Time, w time.Duration) int {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	most, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

// Rate fails t when a window of per holds more than n of starts (a rate
// of n per per). The engine moves a start's token to the instant it calls
// the handler, and a token stays out for per and a margin of per/50 (20 ms
// a second); the test's handler reads its own clock once it runs, and the
// move is a store write of its own. Under the race detector (race) on a
// loaded machine both can come late: there the windows checked are a
// tenth shorter and may hold a claim's worth more (claim: a process's
// free workers), and `make test` runs these tests again without the race
// detector, where the exact bound holds (TIMING_TESTS in the Makefile).
func Rate(t testing.TB, starts []time.Time, n int, per time.Duration, claim int, race bool) {
	t.Helper()
	w, most := per, n
	if race {
		w, most = per-per/10, n+claim
	}
	if m := MaxInWindow(starts, w); m > most {
		t.Errorf("%d starts within %v; want at most the burst, %d (%d under the race detector)", m, w, n, n+claim)
	}
}
