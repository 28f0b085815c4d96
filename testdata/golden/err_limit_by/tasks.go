// Package err_limit_by is a golden error case.
package err_limit_by

import "context"

// Charge has no global limit to apply per customer.
//
//queuemax:task limit_by=customer_id rate_limit=5/s
func Charge(ctx context.Context, customerID int) error { return nil }

// Export names a key that is not one of its parameters.
//
//queuemax:task global_concurrency=1 limit_by=customerID
func Export(ctx context.Context, customerID int, report string) error { return nil }

// Sync has no parameters at all.
//
//queuemax:task global_concurrency=1 limit_by=tenant
func Sync(ctx context.Context) error { return nil }

// Import's key is not a key name.
//
//queuemax:task global_concurrency=1 limit_by=a.b
func Import(ctx context.Context, a int) error { return nil }

// Notify has a per-key limit but no key.
//
//queuemax:task key_concurrency=1
func Notify(ctx context.Context, user int) error { return nil }
