// Package err_bad_time_zone is a golden error case.
package err_bad_time_zone

import "context"

// Nightly names a zone that does not exist.
//
//queuemax:periodic cron="CRON_TZ=Mars/Olympus_Mons 0 3 * * *"
func Nightly(ctx context.Context) error { return nil }
