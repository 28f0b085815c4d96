// Package err_bad_priority is a golden error case.
package err_bad_priority

import "context"

// SendEmail asks for a priority above 2.
//
//queuemax:task priority=3
func SendEmail(ctx context.Context, to string) error { return nil }

// Notify spells the priority out.
//
//queuemax:task priority=high retries=-1
func Notify(ctx context.Context) error { return nil }
