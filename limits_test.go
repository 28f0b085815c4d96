package queuemax

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"
)

// The global limits' behaviour on running engines (two processes, the
// rate, held jobs) is tested in runtime/engine (limits_live_test.go);
// here the cases on both stores, over several processes, and the API's
// errors.

// span is one execution as its handler saw it.
type span struct{ start, end time.Time }

// maxOverlap returns the most spans running at one instant.
func maxOverlap(spans []span) int {
	type ev struct {
		t time.Time
		d int
	}
	evs := make([]ev, 0, 2*len(spans))
	for _, s := range spans {
		evs = append(evs, ev{s.start, 1}, ev{s.end, -1})
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

// maxInWindow returns the most times within any window of length w.
// checkRate fails t when a window of per holds more than n of starts (a
// rate of n per per). The engine moves a start's token to the instant it
// calls the handler, and a token stays out for per and a margin of per/50
// (20 ms a second); the test's handler reads its own clock once it runs,
// and the move is a store write of its own. Under the race detector on a
// loaded machine both can come late: there the windows checked are a
// tenth shorter and may hold a claim's worth more (claim: a process's
// free workers), and `make test` runs these tests again without the race
// detector, where the exact bound holds (see the Makefile).
func checkRate(t *testing.T, starts []time.Time, n int, per time.Duration, claim int) {
	t.Helper()
	w, most := per, n
	if raceEnabled {
		w, most = per-per/10, n+claim
	}
	if m := maxInWindow(starts, w); m > most {
		t.Errorf("%d starts within %v; want at most the burst, %d (%d under the race detector)", m, w, n, n+claim)
	}
}

func maxInWindow(ts []time.Time, w time.Duration) int {
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

// TestGlobalLimits_Invalid: a bad global limit is a clear error at Open.
func TestGlobalLimits_Invalid(t *testing.T) {
	t.Parallel()
	for _, o := range []TaskOptions{
		{GlobalConcurrency: -1},
		{GlobalRateLimit: Rate{Limit: 5}},
		{GlobalRateLimit: Rate{Limit: -5, Per: time.Second}},
	} {
		h := Define("t.Bad", o, func(context.Context, echoArgs) error { return nil })
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}})
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Open with %+v = %v; want ErrInvalidConfig and ErrInvalidLimit", o, err)
		}
	}
}
