// Package err_bad_cron is a golden error case.
package err_bad_cron

import "context"

// Nightly has a minute out of range.
//
//queuemax:periodic cron="61 3 * * *"
func Nightly(ctx context.Context) error { return nil }

// Weekly has too few fields.
//
//queuemax:periodic cron="0 3 *"
func Weekly(ctx context.Context) error { return nil }
