package queuemax

import (
	"context"
	"errors"
	"testing"
)

// custArgs is a payload limited per customer.
type custArgs struct {
	Customer int `json:"customer"`
	N        int `json:"n"`
}

// The per-key limits' behaviour on running engines (per-key concurrency
// and rates, many keys, fairness behind a backlog, task-wide limits beside
// the per-key ones) is tested in runtime/engine (limits_key_live_test.go);
// here the API's errors.

// TestLimitBy_Invalid: limit_by without a global limit, or not a key
// name, is a clear error at Open.
func TestLimitBy_Invalid(t *testing.T) {
	t.Parallel()
	for _, o := range []TaskOptions{
		{LimitBy: "customer"},
		{GlobalConcurrency: 1, LimitBy: "a.b"},
		{GlobalConcurrency: 1, LimitBy: `x"y`},
	} {
		h := Define("t.Bad", o, func(context.Context, echoArgs) error { return nil })
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}})
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Open with %+v = %v; want ErrInvalidConfig and ErrInvalidLimit", o, err)
		}
	}
}
