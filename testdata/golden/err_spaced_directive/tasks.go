// Package err_spaced_directive is a golden error case: a directive with a
// space after the slashes is prose to Go tools, so it is reported instead
// of silently ignored.
package err_spaced_directive

import "context"

// SendEmail has a spaced directive.
//
// queuemax:task priority=2
func SendEmail(ctx context.Context, to string) error { return nil }

// Notify mentions queuemax:task in prose, which is fine.
func Notify(ctx context.Context) error { return nil }
