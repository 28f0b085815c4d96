// Package circuit_off is a golden case: a task whose circuit breaker is off.
package circuit_off

import "context"

// Notify keeps being claimed however often it fails.
//
//queuemax:task circuit=off retries=1000
func Notify(ctx context.Context, user string) error {
	return nil
}
