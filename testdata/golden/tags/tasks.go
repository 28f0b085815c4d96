// Package tags is a golden case: a task whose jobs get default tags.
package tags

import "context"

// Invoice bills one customer; its jobs are tagged billing and eu unless
// Opts.Tags says otherwise.
//
//queuemax:task tags=billing,eu aliases=billing.OldInvoice
func Invoice(ctx context.Context, customer string) error {
	return nil
}
