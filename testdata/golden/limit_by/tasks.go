// Package limit_by is a golden case: global limits per payload key.
package limit_by

import "context"

// Charge calls a payment API that allows each customer one call at a
// time and 10 a second.
//
//queuemax:task global_concurrency=1 global_rate_limit=10/s limit_by=customer_id
func Charge(ctx context.Context, customerID int, cents int) error { return nil }

// Export runs at most two exports per tenant at once.
//
//queuemax:task global_concurrency=2 limit_by=tenant
func Export(ctx context.Context, tenant string, report string) error { return nil }
