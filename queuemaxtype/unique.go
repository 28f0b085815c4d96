package queuemaxtype

import "time"

// UniqueOpts makes a task's jobs unique, as River's UniqueOpts do: an
// enqueue whose key is held by a stored job in one of the counted statuses
// inserts nothing and returns that job's ID (see the root package's
// EnqueueResult). The key is the task name plus the partition key
// (Opts.Key) when set, plus whatever the fields select. The zero value
// means not unique.
//
// The store decides with a unique index over (key, counted status), so
// the answer holds across processes and concurrent enqueues; a job frees
// its key when its status leaves ByState (or it is deleted), never by a
// read-then-write.
type UniqueOpts struct {
	// ByArgs adds the job's arguments (its payload, as canonical JSON:
	// key order and spacing do not matter) to the key
	// (annotation unique=args).
	ByArgs bool
	// ByKey adds Opts.UniqueKey, a key the caller picks, to the key
	// (annotation unique=key); an enqueue without one is
	// ErrInvalidUnique. Not with ByArgs.
	ByKey bool
	// ByPeriod adds the period window holding the job's run time (its
	// RunAt, or the enqueue time) to the key: windows are aligned to UTC
	// multiples of ByPeriod, so ByPeriod: time.Hour makes jobs run in the
	// same clock hour duplicates (annotation unique_for=1h). Zero means
	// no window.
	ByPeriod time.Duration
	// ByState lists the statuses during which a job holds its key. Nil
	// means pending, scheduled and processing; a list must include those
	// three (a job moves between them without asking), and may add
	// completed, failed and cancelled: with completed, a job that
	// succeeded keeps blocking its key while its row is kept (see
	// Config.CompletedRetention, if set) or until its window ends
	// (annotation unique_states=pending,scheduled,processing,completed).
	ByState []Status
}

// IsZero reports whether u leaves jobs not unique.
func (u UniqueOpts) IsZero() bool {
	return !u.ByArgs && !u.ByKey && u.ByPeriod == 0 && u.ByState == nil
}
