// Package err_detached_directive is a golden error case: directives that
// no function consumes.
package err_detached_directive

import "context"

// SendEmail lost its directive to a blank line.
//
//queuemax:task priority=2

func SendEmail(ctx context.Context, to string) error { return nil }

//queuemax:periodic every=1h
var schedule = 1

// Worker has a directive inside its body.
func Worker(ctx context.Context) error {
	//queuemax:task
	return nil
}

// Twice has two directives.
//
//queuemax:task
//queuemax:periodic every=1h
func Twice(ctx context.Context) error { return nil }
