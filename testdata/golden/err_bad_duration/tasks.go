// Package err_bad_duration is a golden error case.
package err_bad_duration

import "context"

// SendEmail has a timeout without a unit and a negative retry delay.
//
//queuemax:task timeout=30 retry_delay=-5s
func SendEmail(ctx context.Context, to string) error { return nil }

// Tick runs more often than once a second.
//
//queuemax:periodic every=500ms
func Tick(ctx context.Context) error { return nil }

// Limited has a malformed rate limit.
//
//queuemax:task rate_limit=10/fortnight
func Limited(ctx context.Context) error { return nil }
