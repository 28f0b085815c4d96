// Package err_every_problem is a golden error case: every problem of one
// annotated function is reported, its annotation's and its signature's.
package err_every_problem

// Broken has two bad annotation values, no context and an unnamed
// parameter.
//
//queuemax:task priority=7 retries=x
func Broken(n int, _ string) (int, int) { return 0, 0 }
