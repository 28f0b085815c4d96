// Package syntax_error is a golden error case: a file that does not parse
// may hide directives, so it is fatal.
package syntax_error

import "context"

// SendEmail is fine.
//
//queuemax:task
func SendEmail(ctx context.Context, to string) error { return nil }

func broken( {
