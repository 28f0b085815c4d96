package queuemax

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/eventbus"
)

// ErrBusClosed is returned by Expect when the EventBus closes while it
// waits.
var ErrBusClosed = errors.New("queuemax: event bus closed")

// EventBusOptions configure NewEventBus. Zero fields mean their defaults.
type EventBusOptions struct {
	// Buffer is how many events each subscriber may have waiting for its
	// callback. When it is full, further events to that subscriber are
	// dropped and counted in EventBusStats. Zero means 256.
	Buffer int
	// History is how many recent events the bus keeps for History and
	// Tree, and how far back cause links reach. Zero means 1000.
	History int
	// ExpectTimeout bounds Expect when its context has no deadline. Zero
	// means 30s.
	ExpectTimeout time.Duration
	// Kinds limits the events the bus listens to. Nil means every kind in
	// EventKinds. Leaving EventAlert out spares the queue its threshold
	// checks when nothing else listens for alerts. NewEventBus panics on a
	// kind not in EventKinds, as Client.On does.
	Kinds []EventKind
	// Logger receives subscriber panics. Nil means the client's logger.
	Logger *slog.Logger
}

// EventBus turns a Client's events into typed events delivered
// asynchronously to callbacks: each subscriber has a bounded
// buffer and a goroutine owned by the bus, so a slow subscriber never
// blocks the queue; when its buffer is full it misses events, which are
// counted. The bus keeps a bounded history that links each event to its
// cause (see Tree) and counts events by kind.
//
// Subscribe by type with Subscribe or by kind pattern with
// SubscribePattern; wait for one event with Expect. Each subscriber sees
// events in the order the bus received them. Events emitted under a context
// from WithoutEvents never reach the bus. An EventBus is safe for
// concurrent use; Close it when done.
//
// Deprecated: Use Client.Subscribe, the one event model: a bounded channel
// per subscriber that cannot block the queue, with drops counted in
// Client.EventStats. EventBus, Subscribe, Expect and Await remain for
// existing code and receive the same events (including JobSnoozed and
// JobCancelled); see the README's "Upgrading" section.
type EventBus struct {
	eng     *eventbus.Bus[Event]
	log     *slog.Logger
	expect  time.Duration
	kinds   []EventKind
	offs    []func()
	closeMu sync.Mutex
	closed  chan struct{} // closed by Close
}

// EventMeta is what the bus adds to every typed event.
type EventMeta struct {
	// ID is unique per bus and increases in the order the bus received the
	// events, starting at 1.
	ID uint64
	// CauseID is the ID of the event that caused this one, 0 if none is
	// known when it is delivered: a job's JobEnqueued causes its
	// JobRetried, JobFailed and JobCompleted events, and a
	// PeriodicEnqueued causes its job's JobEnqueued. History and Tree also
	// show links learned after delivery.
	CauseID uint64
	// Time is when the queue emitted the event.
	Time time.Time
}

// Meta returns m; through embedding, every typed event has it.
func (m EventMeta) Meta() EventMeta { return m }

// TypedEvent is implemented by the typed events only: JobEnqueued,
// JobCompleted, JobFailed, JobRetried, JobSnoozed, JobCancelled, Alert,
// CircuitChanged and PeriodicEnqueued.
type TypedEvent interface {
	// Kind returns the event's kind.
	Kind() EventKind
	// Meta returns the bus's ID, cause and time of the event.
	Meta() EventMeta
	typedEvent()
}

// JobEnqueued follows a committed enqueue (EventEnqueued).
type JobEnqueued struct {
	EventMeta
	JobID JobID
	Shard int
	Task  string
}

// JobCompleted follows a committed completion (EventCompleted).
type JobCompleted struct {
	EventMeta
	JobID   JobID
	Shard   int
	Task    string
	Attempt int // the attempt that succeeded, from 1
}

// JobFailed follows a job's final failure: it went to the dead-letter queue
// (EventFailed).
type JobFailed struct {
	EventMeta
	JobID   JobID
	Shard   int
	Task    string
	Attempt int // the last attempt, from 1
	Error   string
}

// JobRetried follows a failed attempt that will be retried (EventRetried).
type JobRetried struct {
	EventMeta
	JobID   JobID
	Shard   int
	Task    string
	Attempt int // the attempt that failed, from 1
	Error   string
	RetryAt time.Time
}

// JobSnoozed follows a handler returning Snooze(d) (EventSnoozed).
type JobSnoozed struct {
	EventMeta
	JobID   JobID
	Shard   int
	Task    string
	Attempt int       // the attempt that snoozed, from 1
	RetryAt time.Time // when the job runs again
}

// JobCancelled follows a job ending cancelled (EventCancelled). Attempt
// and Error are set when it was running.
type JobCancelled struct {
	EventMeta
	JobID   JobID
	Shard   int
	Task    string
	Attempt int
	Error   string
}

// Alert reports that pending jobs exceed Config.AlertThreshold
// (EventAlert).
type Alert struct {
	EventMeta
	Type      string // "QUEUE_SIZE"
	Pending   int64
	Threshold int
}

// CircuitChanged follows a task's circuit breaker changing state
// (EventCircuit). From and To are "closed", "open" or "half_open".
type CircuitChanged struct {
	EventMeta
	Task     string
	From, To string
}

// PeriodicEnqueued follows the scheduler enqueueing a periodic task's run
// for one scheduled time, Slot (EventPeriodic).
type PeriodicEnqueued struct {
	EventMeta
	Task  string
	JobID JobID
	Shard int
	Slot  time.Time
}

// Kind returns EventEnqueued.
func (JobEnqueued) Kind() EventKind { return EventEnqueued }

// Kind returns EventCompleted.
func (JobCompleted) Kind() EventKind { return EventCompleted }

// Kind returns EventFailed.
func (JobFailed) Kind() EventKind { return EventFailed }

// Kind returns EventRetried.
func (JobRetried) Kind() EventKind { return EventRetried }

// Kind returns EventSnoozed.
func (JobSnoozed) Kind() EventKind { return EventSnoozed }

// Kind returns EventCancelled.
func (JobCancelled) Kind() EventKind { return EventCancelled }

// Kind returns EventAlert.
func (Alert) Kind() EventKind { return EventAlert }

// Kind returns EventCircuit.
func (CircuitChanged) Kind() EventKind { return EventCircuit }

// Kind returns EventPeriodic.
func (PeriodicEnqueued) Kind() EventKind { return EventPeriodic }

func (JobEnqueued) typedEvent()      {}
func (JobCompleted) typedEvent()     {}
func (JobFailed) typedEvent()        {}
func (JobRetried) typedEvent()       {}
func (JobSnoozed) typedEvent()       {}
func (JobCancelled) typedEvent()     {}
func (Alert) typedEvent()            {}
func (CircuitChanged) typedEvent()   {}
func (PeriodicEnqueued) typedEvent() {}

// Cause levels within one job's events: a record's cause is the latest
// record of its job at the highest lower level.
const (
	levelPeriodic = iota
	levelEnqueued
	levelOutcome
)

// typed converts a bus record to its typed event.
func typed(r eventbus.Record[Event]) TypedEvent {
	ev := r.Event
	m := EventMeta{ID: r.ID, CauseID: r.Cause, Time: ev.Time}
	switch ev.Kind {
	case EventEnqueued:
		return JobEnqueued{m, ev.JobID, ev.Shard, ev.Task}
	case EventCompleted:
		return JobCompleted{m, ev.JobID, ev.Shard, ev.Task, ev.Attempt}
	case EventFailed:
		return JobFailed{m, ev.JobID, ev.Shard, ev.Task, ev.Attempt, ev.Error}
	case EventRetried:
		return JobRetried{m, ev.JobID, ev.Shard, ev.Task, ev.Attempt, ev.Error, ev.RetryAt}
	case EventSnoozed:
		return JobSnoozed{m, ev.JobID, ev.Shard, ev.Task, ev.Attempt, ev.RetryAt}
	case EventCancelled:
		return JobCancelled{m, ev.JobID, ev.Shard, ev.Task, ev.Attempt, ev.Error}
	case EventAlert:
		return Alert{m, ev.AlertType, ev.Pending, ev.Threshold}
	case EventCircuit:
		return CircuitChanged{m, ev.Task, ev.From, ev.To}
	case EventPeriodic:
		return PeriodicEnqueued{m, ev.Task, ev.JobID, ev.Shard, ev.Slot}
	}
	return nil
}

// NewEventBus returns a bus fed by c's events; it registers one callback
// per kind with c.On. It starts no goroutine until something subscribes.
// Close removes the callbacks.
//
// Deprecated: Use Client.Subscribe; see EventBus.
func NewEventBus(c *Client, opts EventBusOptions) *EventBus {
	if opts.Logger == nil {
		opts.Logger = c.log
	}
	if opts.ExpectTimeout <= 0 {
		opts.ExpectTimeout = 30 * time.Second
	}
	kinds := opts.Kinds
	if kinds == nil {
		kinds = EventKinds
	}
	b := &EventBus{log: opts.Logger, expect: opts.ExpectTimeout, kinds: kinds, closed: make(chan struct{})}
	b.eng = eventbus.New[Event](eventbus.Options{
		Buffer:  opts.Buffer,
		History: opts.History,
		OnPanic: func(sub, kind string, v any, stack []byte) {
			b.log.Error("event subscriber panicked", "subscriber", sub, "event", kind,
				"panic", fmt.Sprint(v), "stack", string(stack))
		},
	})
	for _, k := range kinds {
		b.offs = append(b.offs, c.On(k, b.publish))
	}
	return b
}

// publish is the callback registered with the client. It never blocks on
// a subscriber.
func (b *EventBus) publish(ev Event) {
	key, level := "", 0
	switch ev.Kind {
	case EventEnqueued:
		key, level = jobKey(ev.JobID), levelEnqueued
	case EventCompleted, EventFailed, EventRetried, EventSnoozed, EventCancelled:
		key, level = jobKey(ev.JobID), levelOutcome
	case EventPeriodic:
		key, level = jobKey(ev.JobID), levelPeriodic
	}
	b.eng.Publish(string(ev.Kind), key, level, ev.Time, ev)
}

func jobKey(id JobID) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(int64(id), 10)
}

// Close unregisters the bus's callbacks from the client, lets every
// subscriber receive the events already buffered for it, and waits for the
// bus's goroutines to exit; a subscriber that never returns blocks Close.
// Waiting Expect calls return ErrBusClosed. Close is idempotent; do not
// call it from a subscriber.
func (b *EventBus) Close() {
	b.closeMu.Lock()
	select {
	case <-b.closed:
	default:
		for _, off := range b.offs {
			off()
		}
		close(b.closed)
	}
	b.closeMu.Unlock()
	b.eng.Close()
}

// Subscribe calls fn with every event of type T the bus receives from now
// on, in order, on a goroutine owned by the bus. The returned function
// unsubscribes; events still buffered for fn are then discarded. A
// panicking fn is recovered and logged. Subscribing to a closed bus does
// nothing.
//
// Deprecated: Use Client.Subscribe; see EventBus.
func Subscribe[T TypedEvent](bus *EventBus, fn func(T)) (unsubscribe func()) {
	var zero T
	kind := string(zero.Kind())
	return bus.eng.Subscribe(kind, func(k string) bool { return k == kind }, func(r eventbus.Record[Event]) {
		if t, ok := typed(r).(T); ok {
			fn(t)
		}
	})
}

// SubscribePattern calls fn with every event whose kind matches pattern,
// a path.Match glob such as "job_*" or "*", as Subscribe does. It returns
// an error, and subscribes nothing, if pattern is malformed or matches
// none of EventKinds.
func (b *EventBus) SubscribePattern(pattern string, fn func(Event)) (unsubscribe func(), err error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("queuemax: event pattern %q: %w", pattern, err)
	}
	matched := false
	for _, k := range EventKinds {
		ok, _ := path.Match(pattern, string(k))
		matched = matched || ok
	}
	if !matched {
		return nil, fmt.Errorf("queuemax: event pattern %q matches no event kind (kinds: %v)", pattern, EventKinds)
	}
	return b.eng.Subscribe(pattern, func(k string) bool {
		ok, _ := path.Match(pattern, k)
		return ok
	}, func(r eventbus.Record[Event]) { fn(r.Event) }), nil
}

// Expect waits for the next event of type T, received after the call, for
// which match (nil: any) returns true, and returns it. It returns ctx's
// error, wrapped, when ctx ends first; when ctx has no deadline,
// EventBusOptions.ExpectTimeout bounds the wait, so Expect never waits
// forever. It returns ErrBusClosed if the bus closes first. match runs on
// the bus's goroutine. Like any subscriber, Expect misses events dropped
// because its buffer was full.
//
// To wait for an event that an action of yours triggers, use Await
// instead: an event emitted before Expect subscribes is missed.
//
// Deprecated: Use Client.Subscribe and read the channel; see EventBus.
func Expect[T TypedEvent](ctx context.Context, bus *EventBus, match func(T) bool) (T, error) {
	return Await(bus, match)(ctx)
}

// Await subscribes at once and returns a function that waits, as Expect
// does, for the first matching event received after Await returned:
//
//	wait := queuemax.Await(bus, func(e queuemax.JobCompleted) bool { return e.JobID == id })
//	// ... start the work ...
//	ev, err := wait(ctx)
//
// Call wait once; it unsubscribes when it returns. Until then, or until the
// bus closes, the subscription stays.
//
// Deprecated: Use Client.Subscribe before starting the work, then read
// the channel; see EventBus.
func Await[T TypedEvent](bus *EventBus, match func(T) bool) (wait func(ctx context.Context) (T, error)) {
	found := make(chan T, 1) // one match is all a wait needs
	unsub := Subscribe(bus, func(t T) {
		if match == nil || match(t) {
			select {
			case found <- t:
			default:
			}
		}
	})
	return func(ctx context.Context) (T, error) {
		defer unsub()
		var zero T
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, bus.expect)
			defer cancel()
		}
		select {
		case t := <-found:
			return t, nil
		case <-ctx.Done():
			return zero, fmt.Errorf("queuemax: expect %s: %w", zero.Kind(), context.Cause(ctx))
		case <-bus.closed:
			// A match delivered while the bus was closing still counts.
			select {
			case t := <-found:
				return t, nil
			default:
			}
			return zero, fmt.Errorf("queuemax: expect %s: %w", zero.Kind(), ErrBusClosed)
		}
	}
}

// History returns the events the bus keeps, oldest first, with the cause
// links known now.
func (b *EventBus) History() []TypedEvent {
	recs := b.eng.History()
	out := make([]TypedEvent, len(recs))
	for i, r := range recs {
		out[i] = typed(r)
	}
	return out
}

// Tree returns the history as a causality tree; see WriteTree.
func (b *EventBus) Tree() string {
	var sb strings.Builder
	_ = b.WriteTree(&sb)
	return sb.String()
}

// WriteTree writes the history as a causality tree: every event on its own
// line under the event that caused it, in the order received, roots at the
// left. For example:
//
//	#1 job_enqueued job=1024 shard=0 task=email.Send
//	├─ #2 job_retried job=1024 attempt=1 error="smtp: 421 busy"
//	└─ #3 job_completed job=1024 attempt=2
//	#4 alert QUEUE_SIZE pending=1001 threshold=1000
func (b *EventBus) WriteTree(w io.Writer) error {
	return eventbus.WriteTree(w, b.eng.History(), func(r eventbus.Record[Event]) string { return describe(r.Event) })
}

// describe is an event's line in a tree.
func describe(ev Event) string {
	switch ev.Kind {
	case EventEnqueued:
		return fmt.Sprintf("%s job=%d shard=%d task=%s", ev.Kind, ev.JobID, ev.Shard, ev.Task)
	case EventCompleted:
		return fmt.Sprintf("%s job=%d attempt=%d", ev.Kind, ev.JobID, ev.Attempt)
	case EventFailed, EventRetried:
		return fmt.Sprintf("%s job=%d attempt=%d error=%q", ev.Kind, ev.JobID, ev.Attempt, ev.Error)
	case EventSnoozed:
		return fmt.Sprintf("%s job=%d attempt=%d retry_at=%s", ev.Kind, ev.JobID, ev.Attempt, ev.RetryAt.UTC().Format(time.RFC3339))
	case EventCancelled:
		if ev.Error != "" {
			return fmt.Sprintf("%s job=%d attempt=%d error=%q", ev.Kind, ev.JobID, ev.Attempt, ev.Error)
		}
		return fmt.Sprintf("%s job=%d", ev.Kind, ev.JobID)
	case EventAlert:
		return fmt.Sprintf("%s %s pending=%d threshold=%d", ev.Kind, ev.AlertType, ev.Pending, ev.Threshold)
	case EventCircuit:
		return fmt.Sprintf("%s task=%s %s→%s", ev.Kind, ev.Task, ev.From, ev.To)
	case EventPeriodic:
		return fmt.Sprintf("%s task=%s job=%d slot=%s", ev.Kind, ev.Task, ev.JobID, ev.Slot.UTC().Format(time.RFC3339))
	}
	return string(ev.Kind)
}

// EventBusStats counts what an EventBus did.
type EventBusStats struct {
	// Dispatched counts the events the bus received from the client.
	Dispatched uint64
	// ByKind counts Dispatched by kind.
	ByKind map[EventKind]uint64
	// Delivered counts subscriber callbacks run, including ones that
	// panicked.
	Delivered uint64
	// Dropped counts events lost because a subscriber's buffer was full.
	Dropped uint64
	// Panics counts subscriber callbacks that panicked.
	Panics uint64
	// LastEvent is the time of the last event, zero if none.
	LastEvent time.Time
	// Subscribers describes the current subscribers, oldest first.
	Subscribers []SubscriberStats
}

// SubscriberStats counts one subscriber's deliveries.
type SubscriberStats struct {
	// ID identifies the subscriber within its bus.
	ID uint64
	// Name is the kind (Subscribe) or pattern (SubscribePattern) it
	// subscribed to.
	Name string
	// Buffered is how many events wait for its callback.
	Buffered int
	// Delivered counts its callbacks run, including ones that panicked.
	Delivered uint64
	// Dropped counts events it missed because its buffer was full.
	Dropped uint64
	// Panics counts its callbacks that panicked.
	Panics uint64
}

// Stats returns a snapshot of the bus's counters.
func (b *EventBus) Stats() EventBusStats {
	st := b.eng.Stats()
	out := EventBusStats{Dispatched: st.Published, ByKind: make(map[EventKind]uint64, len(st.ByKind)),
		Delivered: st.Delivered, Dropped: st.Dropped, Panics: st.Panics, LastEvent: st.LastEvent}
	for k, v := range st.ByKind {
		out.ByKind[EventKind(k)] = v
	}
	for _, s := range st.Subscribers {
		out.Subscribers = append(out.Subscribers, SubscriberStats(s))
	}
	return out
}
