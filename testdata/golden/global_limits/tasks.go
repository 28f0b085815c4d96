// Package global_limits is a golden case: limits over every process.
package global_limits

import "context"

// Charge calls a payment API that allows 100 calls a second in all.
//
//queuemax:task global_rate_limit=100/s retries=2
func Charge(ctx context.Context, customerID int, cents int) error { return nil }

// Export runs at most two at once over every worker process, and at most
// 30 a minute.
//
//queuemax:task global_concurrency=2 global_rate_limit=30/m rate_limit=1/s
func Export(ctx context.Context, report string) error { return nil }
