// Package queue is a golden case: tasks in named queues.
package queue

import "context"

// SendEmail runs in the emails queue, beside the default queue's tasks.
//
//queuemax:task queue=emails priority=1
func SendEmail(ctx context.Context, to string) error {
	return nil
}

// Resize runs in a queue whose name uses every allowed character.
//
//queuemax:task queue=media.resize_v2-hi
func Resize(ctx context.Context, path string) error {
	return nil
}
