// Package periodic_every is a golden case: periodic tasks with a fixed
// interval.
package periodic_every

import "context"

// CleanupOldData deletes expired rows every hour.
//
//queuemax:periodic every=1h retries=0
func CleanupOldData(ctx context.Context) error {
	return nil
}

// Heartbeat runs every 90 seconds with a result.
//
//queuemax:periodic every=90s name=ops.heartbeat priority=2
func Heartbeat(ctx context.Context) (string, error) {
	return "ok", nil
}

// Notify is an ordinary task next to the periodic ones.
//
//queuemax:task
func Notify(ctx context.Context, message string) error {
	return nil
}
