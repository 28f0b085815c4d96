// Package err_unknown_key is a golden error case: unknown keys, with and
// without a suggestion, and an unknown directive.
package err_unknown_key

import "context"

// SendEmail misspells priority.
//
//queuemax:task priorty=2
func SendEmail(ctx context.Context, to string) error { return nil }

// Paint uses a key nobody knows and a periodic key on a task.
//
//queuemax:task colour=red every=1h
func Paint(ctx context.Context) error { return nil }

// Retry uses queue-max's decorator name.
//
//queuemax:tsk
func Retry(ctx context.Context) error { return nil }
