package queuemax

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestWideAndKeyLimits_Invalid: Key limits without LimitBy, or invalid,
// are a clear error at Open.
func TestWideAndKeyLimits_Invalid(t *testing.T) {
	t.Parallel()
	for _, o := range []TaskOptions{
		{KeyConcurrency: 1},
		{KeyRateLimit: Rate{Limit: 1, Per: time.Second}},
		{KeyConcurrency: -1, LimitBy: "customer"},
		{KeyRateLimit: Rate{Limit: 1}, LimitBy: "customer"},
	} {
		h := Define("t.Bad", o, func(context.Context, echoArgs) error { return nil })
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}})
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Open with %+v = %v; want ErrInvalidConfig and ErrInvalidLimit", o, err)
		} else if !strings.Contains(err.Error(), "t.Bad") {
			t.Errorf("Open with %+v = %v; want the handler named", o, err)
		}
	}
}
