// Package missing_generated_file is a golden case run in a temporary
// module with no queuemax_gen.go at all, while other code already uses the
// generated names.
package missing_generated_file

import "context"

// SendEmail delivers one message.
//
//queuemax:task name=missing.SendEmail
func SendEmail(ctx context.Context, to string) error {
	return nil
}

// Welcome uses a generated handle before the file exists.
func Welcome(ctx context.Context, t *Tasks) error {
	_, err := t.SendEmail.Delay(ctx, "a@example.com")
	return err
}
