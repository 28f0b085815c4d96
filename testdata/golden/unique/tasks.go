// Package unique is a golden case: unique tasks.
package unique

import "context"

// SyncUser is unique by its arguments while waiting or running.
//
//queuemax:task unique=args
func SyncUser(ctx context.Context, userID int64) error { return nil }

// Report runs once per day and key, and a success keeps blocking its key.
//
//queuemax:task unique=key unique_for=24h unique_states=pending,scheduled,processing,completed
func Report(ctx context.Context, name string) error { return nil }

// Digest is enqueued at most once per hour, whatever its arguments.
//
//queuemax:task unique_for=1h
func Digest(ctx context.Context, since string) error { return nil }
