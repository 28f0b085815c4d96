package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/runtime/breaker"
)

// The worker asks before it claims and settles the ticket with the outcome.
// A claim that finds no job releases the ticket, so a half-open probe never
// wedges the breaker.
func ExampleBreaker_Allow() {
	b, err := breaker.New(breaker.Config{
		Threshold: 2,
		Timeout:   time.Minute,
		OnStateChange: func(from, to breaker.State) {
			fmt.Printf("breaker %v -> %v\n", from, to)
		},
	})
	if err != nil {
		panic(err)
	}
	claimAndRun := func(found bool, jobErr error) {
		t, ok := b.Allow()
		if !ok {
			fmt.Println("rejected")
			return
		}
		if !found {
			t.Release()
			return
		}
		t.Done(jobErr)
	}
	claimAndRun(false, nil)
	claimAndRun(true, errors.New("smtp: connection refused"))
	claimAndRun(true, errors.New("smtp: connection refused"))
	claimAndRun(true, nil)
	fmt.Println(b.State())
	// Output:
	// breaker closed -> open
	// rejected
	// open
}

func ExampleBreaker_Call() {
	b, err := breaker.New(breaker.Config{Threshold: 1})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	err = b.Call(ctx, func(context.Context) error { return errors.New("timeout") })
	fmt.Println(err)
	err = b.Call(ctx, func(context.Context) error { return nil })
	fmt.Println(errors.Is(err, breaker.ErrOpen))
	// Output:
	// timeout
	// true
}
