// Package err_duplicate_names is a golden error case: two tasks claim one
// name, and a generated name collides with a declaration.
package err_duplicate_names

import "context"

// SendEmail claims mail.send.
//
//queuemax:task name=mail.send
func SendEmail(ctx context.Context, to string) error { return nil }

// SendEmailV2 claims it too.
//
//queuemax:task name=mail.send
func SendEmailV2(ctx context.Context, to string) error { return nil }

// Resize collides with a hand-written ResizeArgs.
//
//queuemax:task
func Resize(ctx context.Context, width int) error { return nil }

// ResizeArgs is hand-written.
type ResizeArgs struct{}

// Lookup has two parameters that map to one payload field.
//
//queuemax:task
func Lookup(ctx context.Context, userID int64, userId string) error { return nil }
