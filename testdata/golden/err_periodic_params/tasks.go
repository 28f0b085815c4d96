// Package err_periodic_params is a golden error case.
package err_periodic_params

import "context"

// Cleanup takes a parameter, which a schedule cannot supply.
//
//queuemax:periodic every=1h
func Cleanup(ctx context.Context, olderThanDays int) error { return nil }
