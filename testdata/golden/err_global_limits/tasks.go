// Package err_global_limits is a golden error case.
package err_global_limits

import "context"

// Charge has no unit on its rate.
//
//queuemax:task global_rate_limit=100
func Charge(ctx context.Context, cents int) error { return nil }

// Export allows no job at all.
//
//queuemax:task global_concurrency=0
func Export(ctx context.Context) error { return nil }

// Import's cap is not a number.
//
//queuemax:task global_concurrency=two global_rate_limit=0/s
func Import(ctx context.Context) error { return nil }
