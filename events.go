package queuemax

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
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
	// EventSnoozed follows a handler returning Snooze(d): the job runs
	// again at RetryAt without having spent the attempt (Attempt is the
	// attempt that snoozed). A snooze past Config.MaxSnoozes dead-letters
	// the job and is an EventFailed instead.
	EventSnoozed EventKind = "job_snoozed"
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
)

// EventKinds lists every kind.
var EventKinds = []EventKind{EventEnqueued, EventCompleted, EventFailed, EventRetried, EventSnoozed, EventCancelled, EventAlert, EventCircuit, EventPeriodic}

// Event describes something that happened to the queue. Only the fields
// that apply to its Kind are set.
type Event struct {
	Kind    EventKind
	Time    time.Time
	JobID   JobID
	Shard   int
	Task    string
	Attempt int       // the attempt that ended (completed, failed, retried, snoozed, cancelled while running)
	Error   string    // failed, retried, cancelled while running
	RetryAt time.Time // retried, snoozed: when the job runs again
	// Alert fields.
	AlertType string // "QUEUE_SIZE"
	Pending   int64
	Threshold int
	// Circuit fields: the breaker states, "closed", "open" or "half_open".
	From, To string
	// Periodic fields: the scheduled time the job was enqueued for.
	Slot time.Time
}

// DefaultSubscribeChanSize is the buffer of a Subscribe channel when
// SubscribeConfig.ChanSize is zero.
const DefaultSubscribeChanSize = 1000

// SubscribeConfig configures Client.SubscribeConfig. The zero value
// subscribes to every kind with a buffer of DefaultSubscribeChanSize.
type SubscribeConfig struct {
	// ChanSize is the channel's buffer, in events. While it is full, the
	// events the channel would receive are dropped and counted (see
	// Client.EventStats), so a slow reader never blocks the queue. Zero
	// means DefaultSubscribeChanSize.
	ChanSize int
	// Kinds are the kinds to receive. Nil or empty means every kind in
	// EventKinds.
	Kinds []EventKind
}

// EventStats counts what the client's subscriptions received.
type EventStats struct {
	// Subscriptions is the number of open Subscribe channels.
	Subscriptions int
	// Sent counts events put on Subscribe channels.
	Sent uint64
	// Dropped counts events a Subscribe channel missed because its buffer
	// was full.
	Dropped uint64
}

// events is the subscription registry. Sends happen on the goroutine that
// caused the event, after the change has committed, and never block.
type events struct {
	mu   sync.RWMutex
	next int
	subs map[EventKind][]*subscription // in subscription order
	open int                           // Subscribe channels, guarded by mu

	sent, dropped atomic.Uint64
}

// subscription is one On callback (fn) or one Subscribe channel (ch).
type subscription struct {
	id int
	fn func(Event)

	mu      sync.Mutex  // orders sends against the close
	ch      chan *Event // closed once, under mu, by cancel or Close
	closed  bool        // guarded by mu
	dropped atomic.Uint64
}

// send puts ev on s's channel without blocking and reports whether it
// did; false means it was full (or closed).
func (s *subscription) send(ev *Event) (sent, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, false
	}
	select {
	case s.ch <- ev:
		return true, false
	default:
		return false, true
	}
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

// Subscribe returns a channel that receives the client's events of kinds
// (every kind if none is given), and a function that cancels the
// subscription and closes the channel. See SubscribeConfig for the buffer.
//
//	events, cancel := c.Subscribe(queuemax.EventCompleted, queuemax.EventFailed)
//	defer cancel()
//	for ev := range events { ... }
//
// Events are sent after the change they describe has committed, in the
// order the goroutine that caused them emitted them; events from different
// goroutines (workers, enqueuers) interleave. A send never blocks: while
// the channel is full its events are dropped and counted in EventStats, so
// a slow reader cannot slow the queue. Each receiver gets its own *Event.
// The channel is also closed by Client.Close. Subscribe panics on a kind
// not in EventKinds (a programming error). It is safe for concurrent use.
func (c *Client) Subscribe(kinds ...EventKind) (<-chan *Event, func()) {
	return c.SubscribeConfig(&SubscribeConfig{Kinds: kinds})
}

// SubscribeConfig is Subscribe with a buffer size; nil cfg means the
// defaults.
func (c *Client) SubscribeConfig(cfg *SubscribeConfig) (<-chan *Event, func()) {
	if cfg == nil {
		cfg = &SubscribeConfig{}
	}
	kinds := cfg.Kinds
	if len(kinds) == 0 {
		kinds = EventKinds
	}
	size := cfg.ChanSize
	if size <= 0 {
		size = DefaultSubscribeChanSize
	}
	s := &subscription{ch: make(chan *Event, size)}
	return s.ch, c.subscribe("Subscribe", kinds, s)
}

// On registers fn for events of kind and returns a function that removes
// it. fn runs synchronously on the goroutine that caused the event (a
// worker, an enqueuer), after the change is committed; a panic in it is
// recovered and logged. On panics for a kind not in EventKinds.
//
// Deprecated: Use Client.Subscribe, whose bounded channel cannot slow the
// queue. A slow fn passed to On blocks the worker or enqueuer that emitted
// the event. On remains for existing code and for exact, quick counters
// (the queuemaxprom and queuemaxotel collectors use it: they must not miss
// an event and only increment a counter).
func (c *Client) On(kind EventKind, fn func(Event)) (unsubscribe func()) {
	return c.subscribe("On", []EventKind{kind}, &subscription{fn: fn})
}

// subscribe adds s under kinds and returns its cancel function.
func (c *Client) subscribe(caller string, kinds []EventKind, s *subscription) func() {
	for _, kind := range kinds {
		if !slices.Contains(EventKinds, kind) {
			panic(fmt.Sprintf("queuemax: %s: unknown event kind %q (valid: %v)", caller, kind, EventKinds))
		}
	}
	e := &c.events
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.subs == nil {
		e.subs = make(map[EventKind][]*subscription)
	}
	if s.ch != nil && c.closed.Load() {
		// Close has run (or is running closeAll, which waits for the
		// lock): nothing will be sent, so hand back a closed channel.
		s.closed = true // s is not shared yet
		close(s.ch)
		return func() {}
	}
	s.id = e.next
	e.next++
	for _, kind := range kinds {
		if !slices.Contains(e.subs[kind], s) {
			e.subs[kind] = append(slices.Clip(e.subs[kind]), s)
		}
	}
	if s.ch != nil {
		e.open++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, kind := range kinds {
				e.subs[kind] = slices.DeleteFunc(slices.Clone(e.subs[kind]), func(o *subscription) bool { return o == s })
			}
			e.closeLocked(s)
		})
	}
}

// closeLocked closes s's channel once; e.mu must be held.
func (e *events) closeLocked(s *subscription) {
	if s.ch == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		e.open--
		close(s.ch)
	}
}

// closeAll closes every Subscribe channel (Client.Close).
func (e *events) closeAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for kind, subs := range e.subs {
		for _, s := range subs {
			e.closeLocked(s)
		}
		e.subs[kind] = slices.DeleteFunc(slices.Clone(subs), func(s *subscription) bool { return s.ch != nil })
	}
}

// EventStats returns the counts of the client's Subscribe channels.
func (c *Client) EventStats() EventStats {
	c.events.mu.RLock()
	open := c.events.open
	c.events.mu.RUnlock()
	return EventStats{Subscriptions: open, Sent: c.events.sent.Load(), Dropped: c.events.dropped.Load()}
}

func (c *Client) emit(ctx context.Context, ev Event) {
	if eventsSuppressed(ctx) {
		return
	}
	e := &c.events
	e.mu.RLock()
	subs := e.subs[ev.Kind] // copied on write: safe to read unlocked
	e.mu.RUnlock()
	if len(subs) == 0 {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = c.now()
	}
	// In subscription order, so that a reader subscribed after an exact
	// counter (On) sees the event only once it is counted. Callbacks run
	// without e.mu, so that one may unsubscribe.
	for _, s := range subs {
		if s.fn != nil {
			c.callback(ctx, ev, s.fn)
			continue
		}
		evc := ev
		sent, full := s.send(&evc)
		switch {
		case sent:
			e.sent.Add(1)
		case full:
			e.dropped.Add(1)
			if s.dropped.Add(1) == 1 {
				c.log.WarnContext(ctx, "event subscriber is not keeping up; dropping its events (counted in Client.EventStats)",
					"event", string(ev.Kind), "buffer", cap(s.ch))
			}
		}
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
