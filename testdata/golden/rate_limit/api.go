// Package rate_limit is a golden case: per-task token buckets.
package rate_limit

import "context"

// CallAPI may start ten times a second.
//
//queuemax:task rate_limit=10/s
func CallAPI(ctx context.Context, endpoint string) error {
	return nil
}

// SyncAccount may start a hundred times a minute.
//
//queuemax:task rate_limit=100/m retry_delay=10s
func SyncAccount(ctx context.Context, accountID string) error {
	return nil
}

// Export may start a thousand times an hour, or five per 30 seconds.
//
//queuemax:task rate_limit=5/30s
func Export(ctx context.Context, format string) error {
	return nil
}

// Archive may start a thousand times an hour.
//
//queuemax:task rate_limit=1000/h
func Archive(ctx context.Context, id int) error {
	return nil
}
