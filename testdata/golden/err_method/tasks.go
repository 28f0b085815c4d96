// Package err_method is a golden error case.
package err_method

import "context"

// Mailer sends mail.
type Mailer struct{}

// Send is a method.
//
//queuemax:task
func (m *Mailer) Send(ctx context.Context, to string) error { return nil }

// Each is generic.
//
//queuemax:task
func Each[T any](ctx context.Context, v T) error { return nil }
