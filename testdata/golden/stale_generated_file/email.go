// Package stale_generated_file is a golden case run in a temporary module
// whose queuemax_gen.go is stale: it was generated for an older signature
// and still declares a task that no longer exists.
package stale_generated_file

import "context"

// SendEmail gained a parameter since the last generation.
//
//queuemax:task name=stale.SendEmail priority=1
func SendEmail(ctx context.Context, to, subject, body string) error {
	return nil
}

// enqueueWelcome uses the generated code; with the stale file cut away it
// does not type-check, which must not stop generation.
func enqueueWelcome(ctx context.Context, t *Tasks) error {
	_, err := t.SendEmail.Delay(ctx, "a@example.com", "Welcome", "Hello")
	return err
}
