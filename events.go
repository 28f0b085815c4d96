package queuemax

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// EventKind names a queue event. The names match queue-max's.
type EventKind string

// Event kinds.
const (
	// EventEnqueued follows every committed enqueue (one per job).
	EventEnqueued EventKind = "job_enqueued"
	// EventCompleted follows a committed completion.
	EventCompleted EventKind = "job_completed"
	// EventFailed follows a job's final failure: it was dead-lettered,
	// because the error was permanent or its attempts ran out.
	EventFailed EventKind = "job_failed"
	// EventRetried follows a failed attempt that will be retried.
	EventRetried EventKind = "job_retried"
	// EventCancelled follows a job ending cancelled: Client.Cancel of a
	// waiting job, or a running job stopped by Client.Cancel or returning
	// Cancel(err) (Attempt and Error are set then).
	EventCancelled EventKind = "job_cancelled"
	// EventAlert fires when the pending count crosses above
	// Config.AlertThreshold, and again at most once a minute while it stays
	// above.
	EventAlert EventKind = "alert"
	// EventCircuit follows a task's circuit breaker changing state (Task,
	// From, To).
	EventCircuit EventKind = "circuit_state_changed"
	// EventPeriodic follows the scheduler enqueueing a periodic task's run
	// for one scheduled time (Task, JobID, Slot).
	EventPeriodic EventKind = "periodic_enqueued"
	// EventQueuePaused follows Client.Pause on this client (Queue).
	EventQueuePaused EventKind = "queue_paused"
	// EventQueueResumed follows Client.Resume on this client (Queue).
	EventQueueResumed EventKind = "queue_resumed"
)

// EventKinds lists every kind.
var EventKinds = []EventKind{EventEnqueued, EventCompleted, EventFailed, EventRetried, EventCancelled, EventAlert, EventCircuit, EventPeriodic, EventQueuePaused, EventQueueResumed}

// Event describes something that happened to the queue. Only the fields
// that apply to its Kind are set.
type Event struct {
	Kind    EventKind
	Time    time.Time
	JobID   JobID
	Shard   int
	Task    string
	Attempt int       // the attempt that ended (completed, failed, retried)
	Error   string    // failed, retried
	RetryAt time.Time // retried
	// Alert fields.
	AlertType string // "QUEUE_SIZE"
	Pending   int64
	Threshold int
	// Circuit fields: the breaker states, "closed", "open" or "half_open".
	From, To string
	// Periodic fields: the scheduled time the job was enqueued for.
	Slot time.Time
	// Queue is the queue paused or resumed.
	Queue string
}

// events is the callback registry. Callbacks run synchronously on the
// goroutine that caused the event, after the change has committed; a
// panicking callback is recovered and logged and the queue carries on.
type events struct {
	mu   sync.RWMutex
	next int
	subs map[EventKind][]subscriber // in registration order
}

type subscriber struct {
	id int
	fn func(Event)
}

type noEventsKey struct{}

// WithoutEvents returns a context under which enqueues and other calls made
// with it emit no events (queue-max's batch()). It is scoped to calls that
// use the context, so other goroutines and workers keep their events, and
// scopes nest naturally.
func WithoutEvents(ctx context.Context) context.Context {
	return context.WithValue(ctx, noEventsKey{}, true)
}

func eventsSuppressed(ctx context.Context) bool {
	v, _ := ctx.Value(noEventsKey{}).(bool)
	return v
}

// On registers fn for events of kind and returns a function that removes
// it. Callbacks run synchronously on the goroutine that caused the event,
// after the change is committed, so they should be quick; a panic in one is
// recovered and logged. On panics for a kind not in EventKinds (a
// programming error).
func (c *Client) On(kind EventKind, fn func(Event)) (unsubscribe func()) {
	valid := false
	for _, k := range EventKinds {
		valid = valid || k == kind
	}
	if !valid {
		panic(fmt.Sprintf("queuemax: On: unknown event kind %q (valid: %v)", kind, EventKinds))
	}
	e := &c.events
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.subs == nil {
		e.subs = make(map[EventKind][]subscriber)
	}
	id := e.next
	e.next++
	e.subs[kind] = append(e.subs[kind], subscriber{id, fn})
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.subs[kind] = slices.DeleteFunc(slices.Clone(e.subs[kind]), func(s subscriber) bool { return s.id == id })
	}
}

func (c *Client) emit(ctx context.Context, ev Event) {
	if eventsSuppressed(ctx) {
		return
	}
	c.events.mu.RLock()
	subs := c.events.subs[ev.Kind]
	if len(subs) == 0 {
		c.events.mu.RUnlock()
		return
	}
	c.events.mu.RUnlock()
	if ev.Time.IsZero() {
		ev.Time = c.now()
	}
	for _, s := range subs {
		c.callback(ctx, ev, s.fn)
	}
}

func (c *Client) hasSubscribers(kind EventKind) bool {
	c.events.mu.RLock()
	defer c.events.mu.RUnlock()
	return len(c.events.subs[kind]) > 0
}

func (c *Client) callback(ctx context.Context, ev Event, fn func(Event)) {
	defer func() {
		if r := recover(); r != nil {
			c.log.ErrorContext(ctx, "event callback panicked", "event", string(ev.Kind), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn(ev)
}
