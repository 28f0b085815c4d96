package queuemax

import "github.com/queuemax/queuemax/runtime/enqueue"

// ResolveTask maps a task name as a person writes it to the name of one of
// handlers: the full name, the name without its import path
// (tasks.SendEmail) or the bare function name (SendEmail). ok is false when
// no handler matches; a short name that matches several handlers is an
// ErrUnknownTask error listing them.
func ResolveTask(handlers []string, name string) (full string, ok bool, err error) {
	return enqueue.ResolveTask(handlers, name)
}

// UnknownTaskError returns the ErrUnknownTask error for name, with the
// nearest of known (by full or short name) as a suggestion and the known
// names listed.
func UnknownTaskError(name string, known []string) error {
	return enqueue.UnknownTaskError(name, known)
}
