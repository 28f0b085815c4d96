// Package err_variadic is a golden error case.
package err_variadic

import "context"

// SendEmail takes a variadic list.
//
//queuemax:task
func SendEmail(ctx context.Context, subject string, to ...string) error { return nil }
