// Package err_not_exported is a golden error case.
package err_not_exported

import "context"

// sendEmail is not exported.
//
//queuemax:task
func sendEmail(ctx context.Context, to string) error { return nil }
