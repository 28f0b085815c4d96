// Package err_bad_queue is a golden error case.
package err_bad_queue

import "context"

// SendEmail names its queue in capitals.
//
//queuemax:task queue=Emails
func SendEmail(ctx context.Context, to string) error { return nil }

// Notify starts its queue's name with a dash.
//
//queuemax:task queue=-notify retries=2
func Notify(ctx context.Context) error { return nil }
