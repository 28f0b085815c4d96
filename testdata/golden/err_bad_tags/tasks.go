// Package err_bad_tags is a golden error case.
package err_bad_tags

import "context"

// Invoice repeats a tag and leaves one empty.
//
//queuemax:task tags=billing,,billing
func Invoice(ctx context.Context, customer string) error { return nil }
