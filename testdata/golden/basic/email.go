// Package basic is a golden case: a plain task with defaults and options.
package basic

import (
	"context"
	"time"
)

// SendEmail delivers one message.
//
//queuemax:task priority=2 retries=5 timeout=30s
func SendEmail(ctx context.Context, to, subject string) error {
	return nil
}

// Resize scales an image; its parameters cover names and types that need
// care: initialisms, pointers, slices, maps, structs and other packages.
//
//queuemax:task name=images.resize retries=0 retry_delay=1500ms
func Resize(ctx context.Context, imageURL string, userID int64, sizes []int, meta map[string]string, deadline time.Time, crop *Rect) error {
	return nil
}

// Rect is a crop rectangle.
type Rect struct {
	X, Y, W, H int
}
