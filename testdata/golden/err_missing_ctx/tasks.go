// Package err_missing_ctx is a golden error case.
package err_missing_ctx

import "context"

// SendEmail forgot ctx.
//
//queuemax:task
func SendEmail(to, subject string) error { return nil }

// Ping takes nothing at all.
//
//queuemax:task
func Ping() error { return nil }

// Late takes ctx second.
//
//queuemax:task
func Late(to string, ctx context.Context) error { return nil }
