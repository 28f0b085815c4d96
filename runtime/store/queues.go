package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultQueue is the queue of every job enqueued without one, and of every
// row queue-max writes (the queue column's default).
const DefaultQueue = "default"

// MaxQueueName is the longest queue name, in bytes.
const MaxQueueName = 64

// ErrInvalidQueue is wrapped by CheckQueueName's errors.
var ErrInvalidQueue = errors.New("queuemax: invalid queue name")

// CheckQueueName reports whether name may name a queue: 1 to MaxQueueName
// bytes of lowercase ASCII letters, digits, '_', '-' and '.', starting with
// a letter or digit (River's rule, with '.'). The error wraps
// ErrInvalidQueue and says what is wrong.
func CheckQueueName(name string) error {
	if p := QueueNameProblem(name); p != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidQueue, name, p)
	}
	return nil
}

// QueueNameProblem says what is wrong with a queue name, or "" if nothing
// is (see CheckQueueName).
func QueueNameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxQueueName:
		return fmt.Sprintf("longer than %d bytes", MaxQueueName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-' || c == '.') && i > 0:
		default:
			return fmt.Sprintf("character %q at %d (want a-z, 0-9, and _ - . after the first)", c, i)
		}
	}
	return ""
}

// QueueOf returns the stored queue name for q: DefaultQueue when empty.
func QueueOf(q string) string {
	if q == "" {
		return DefaultQueue
	}
	return q
}

// QueueLimit caps one queue in a claim (ClaimParams.Queues).
type QueueLimit struct {
	Queue string
	Max   int
}

// QueueState is one queue as Store.QueueList reports it: its waiting and
// running jobs over every shard and whether it is paused.
type QueueState struct {
	Name       string
	Pending    int64 // ready now
	Scheduled  int64 // waiting for a run-at or retry time
	Processing int64
	Paused     bool
	// PausedAt is when the queue was paused (zero when it is not);
	// UpdatedAt when it was last paused or resumed (zero if never).
	PausedAt, UpdatedAt time.Time
}

// QueueAdmin is the part of Store that manages named queues. Claims skip the
// jobs of a paused queue (on every process, from the next claim on);
// running jobs are not affected.
type QueueAdmin interface {
	// QueuePause pauses queue name (any valid name, with or without
	// jobs). Pausing a paused queue changes nothing.
	QueuePause(ctx context.Context, name string, now time.Time) error
	// QueueResume resumes queue name. Resuming a queue that is not
	// paused changes nothing.
	QueueResume(ctx context.Context, name string, now time.Time) error
	// QueueList returns every queue that has pending, scheduled or
	// processing jobs, or that was ever paused, ordered by name.
	QueueList(ctx context.Context) ([]QueueState, error)
}

// QueuesLeft returns the caps qs leave after a claim took jobs: each
// queue's Max less its jobs taken, queues left with none dropped. A store
// whose Claim runs one statement per shard calls it between shards, so
// that the caps hold over the whole Claim. Nil stays nil (no caps).
func QueuesLeft(qs []QueueLimit, jobs []*Job) []QueueLimit {
	if qs == nil || len(jobs) == 0 {
		return qs
	}
	taken := make(map[string]int, len(qs))
	for _, j := range jobs {
		taken[QueueOf(j.Queue)]++
	}
	out := make([]QueueLimit, 0, len(qs))
	for _, q := range qs {
		if n := q.Max - taken[QueueOf(q.Queue)]; n > 0 {
			out = append(out, QueueLimit{Queue: q.Queue, Max: n})
		}
	}
	return out
}
