// Package unrelated_type_error is a golden case whose input does not
// compile, but only outside annotated signatures, so generation succeeds.
package unrelated_type_error

import "context"

// SendEmail is fine.
//
//queuemax:task
func SendEmail(ctx context.Context, to string) error {
	return undefinedHelper(to)
}

var broken int = "not an int"
