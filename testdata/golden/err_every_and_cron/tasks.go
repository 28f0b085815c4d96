// Package err_every_and_cron is a golden error case.
package err_every_and_cron

import "context"

// Both sets two schedules.
//
//queuemax:periodic every=1h cron="@daily"
func Both(ctx context.Context) error { return nil }

// Neither sets none.
//
//queuemax:periodic priority=1
func Neither(ctx context.Context) error { return nil }
