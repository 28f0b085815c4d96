// Package err_unnamed_param is a golden error case.
package err_unnamed_param

import "context"

// SendEmail has no parameter names.
//
//queuemax:task
func SendEmail(context.Context, string, int) error { return nil }

// Blank has a blank payload parameter.
//
//queuemax:task
func Blank(ctx context.Context, _ string) error { return nil }
