package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/runtime/ratelimit"
)

func ExampleLimiter_TryAcquire() {
	lim, err := ratelimit.PerMinute(2)
	if err != nil {
		panic(err)
	}
	fmt.Println(lim.TryAcquire(), lim.TryAcquire(), lim.TryAcquire())
	fmt.Println(lim.RetryAfter().Round(time.Second))
	// Output:
	// true true false
	// 30s
}

// A nil *Limiter imposes no limit, so callers need no branches.
func ExampleLimiter_Acquire_nil() {
	var lim *ratelimit.Limiter
	fmt.Println(lim.Acquire(context.Background()))
	// Output:
	// <nil>
}
