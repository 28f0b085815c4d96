// Package err_duplicate_key is a golden error case.
package err_duplicate_key

import "context"

// SendEmail sets retries twice.
//
//queuemax:task retries=1 priority=1 retries=2
func SendEmail(ctx context.Context, to string) error { return nil }
