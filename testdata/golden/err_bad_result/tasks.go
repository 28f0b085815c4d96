// Package err_bad_result is a golden error case.
package err_bad_result

import "context"

// NoError returns nothing.
//
//queuemax:task
func NoError(ctx context.Context) {}

// Int returns an int alone.
//
//queuemax:task
func Int(ctx context.Context) int { return 0 }

// Three returns too much.
//
//queuemax:task
func Three(ctx context.Context) (int, string, error) { return 0, "", nil }

// ErrorFirst has the error first.
//
//queuemax:task
func ErrorFirst(ctx context.Context) (error, int) { return nil, 0 }

// ChanResult returns something JSON cannot hold.
//
//queuemax:task
func ChanResult(ctx context.Context) (chan int, error) { return nil, nil }
