// Package err_unencodable_params is a golden error case: parameters that
// JSON cannot round-trip.
package err_unencodable_params

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

// Chan takes a channel.
//
//queuemax:task
func Chan(ctx context.Context, ch chan int) error { return nil }

// Func takes a function.
//
//queuemax:task
func Func(ctx context.Context, callback func() error) error { return nil }

// Pointer takes an unsafe.Pointer.
//
//queuemax:task
func Pointer(ctx context.Context, p unsafe.Pointer) error { return nil }

// Stringer takes an interface with methods.
//
//queuemax:task
func Stringer(ctx context.Context, s fmt.Stringer) error { return nil }

// Any takes an empty interface.
//
//queuemax:task
func Any(ctx context.Context, v any) error { return nil }

// Nested hides a function in a struct field.
//
//queuemax:task
func Nested(ctx context.Context, opts Options) error { return nil }

// Complex takes a complex number and a map with struct keys.
//
//queuemax:task
func Complex(ctx context.Context, c complex128, m map[Key]int) error { return nil }

// Fine is encodable: json:"-" fields, unexported fields and types with
// MarshalJSON are skipped.
//
//queuemax:task
func Fine(ctx context.Context, s Skipped, at time.Time) error { return nil }

// Options hides a function.
type Options struct {
	Name  string
	Hooks []Hook
}

// Hook is a function.
type Hook struct {
	Before func()
}

// Key is a struct, which JSON cannot use as a map key.
type Key struct{ A, B int }

// Skipped is encodable.
type Skipped struct {
	Callback func() `json:"-"`
	private  chan int
	Name     string
}
