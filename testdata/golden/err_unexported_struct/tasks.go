// Package err_unexported_struct is a golden error case: a struct whose
// fields are all unexported always encodes as {}.
package err_unexported_struct

import "context"

// Hidden takes a struct with only unexported fields.
//
//queuemax:task
func Hidden(ctx context.Context, p point) error { return nil }

// Deep hides one inside a field.
//
//queuemax:task
func Deep(ctx context.Context, o Outer) error { return nil }

// Fine takes an empty struct and one with an exported field.
//
//queuemax:task
func Fine(ctx context.Context, e struct{}, p Point) error { return nil }

type point struct{ x, y int }

// Outer holds a counter, whose fields are unexported.
type Outer struct {
	Name  string
	Count counter
}

type counter struct{ n int }

// Point has one exported field.
type Point struct {
	X int
	y int
}
