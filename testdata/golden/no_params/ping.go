// Package no_params is a golden case: a task that takes only ctx, so it
// has no Map method.
package no_params

import "context"

// Ping checks the queue end to end.
//
//queuemax:task
func Ping(ctx context.Context) error {
	return nil
}
