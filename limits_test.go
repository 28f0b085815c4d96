package queuemax

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/limitcheck"
)

// The global limits' behaviour on running engines (two processes, the
// rate, held jobs) is tested in runtime/engine (limits_live_test.go);
// here the cases on both stores, over several processes, and the API's
// errors.

// span, maxOverlap, maxInWindow and checkRate are internal/limitcheck's,
// shared with the runtime/engine package's limit tests.
type span = limitcheck.Span

var (
	maxOverlap  = limitcheck.MaxOverlap
	maxInWindow = limitcheck.MaxInWindow
)

func checkRate(t *testing.T, starts []time.Time, n int, per time.Duration, claim int) {
	t.Helper()
	limitcheck.Rate(t, starts, n, per, claim, raceEnabled)
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
