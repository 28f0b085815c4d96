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

// Sync runs at most 10 syncs at once in all, 1 per tenant, and 5 a
// minute per tenant.
//
//queuemax:task global_concurrency=10 key_concurrency=1 key_rate_limit=5/m limit_by=tenant
func Sync(ctx context.Context, tenant string) error { return nil }
