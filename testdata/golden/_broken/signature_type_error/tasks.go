// Package signature_type_error is a golden error case whose input does
// not compile: a type error inside an annotated signature is fatal.
package signature_type_error

import "context"

// SendEmail uses an undefined type.
//
//queuemax:task
func SendEmail(ctx context.Context, to Address) error { return nil }
