// Package periodic_cron is a golden case: periodic tasks on cron specs.
package periodic_cron

import "context"

// Nightly runs at 03:00 in the server's zone.
//
//queuemax:periodic cron="0 3 * * *" timeout=1h misfire=catch_up
func Nightly(ctx context.Context) error {
	return nil
}

// ParisMorning runs at 06:30 Paris time on weekdays.
//
//queuemax:periodic cron="CRON_TZ=Europe/Paris 30 6 * * 1-5"
func ParisMorning(ctx context.Context) error {
	return nil
}

// Hourly uses a descriptor.
//
//queuemax:periodic cron=@hourly
func Hourly(ctx context.Context) error {
	return nil
}
