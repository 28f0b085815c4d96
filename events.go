package queuemax

import (
	"context"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
)

// EventKind names a queue event; see queuemaxtype.EventKind for the kinds.
type EventKind = queuemaxtype.EventKind

// Event describes something that happened to the queue; see
// queuemaxtype.Event for its fields.
type Event = queuemaxtype.Event

// Event kinds; see queuemaxtype.EventEnqueued and the others for what each
// follows.
const (
	EventEnqueued     = queuemaxtype.EventEnqueued
	EventCompleted    = queuemaxtype.EventCompleted
	EventFailed       = queuemaxtype.EventFailed
	EventRetried      = queuemaxtype.EventRetried
	EventSnoozed      = queuemaxtype.EventSnoozed
	EventCancelled    = queuemaxtype.EventCancelled
	EventAlert        = queuemaxtype.EventAlert
	EventCircuit      = queuemaxtype.EventCircuit
	EventPeriodic     = queuemaxtype.EventPeriodic
	EventQueuePaused  = queuemaxtype.EventQueuePaused
	EventQueueResumed = queuemaxtype.EventQueueResumed
	// Workflow ends (see Client.EnqueueWorkflow).
	EventWorkflowCompleted = queuemaxtype.EventWorkflowCompleted
	EventWorkflowFailed    = queuemaxtype.EventWorkflowFailed
)

// EventKinds lists every kind.
var EventKinds = queuemaxtype.EventKinds

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

// EventStats counts the client's events.
type EventStats struct {
	// Subscriptions is the number of open Subscribe channels.
	Subscriptions int
	// Sent counts events put on Subscribe channels.
	Sent uint64
	// Dropped counts events a Subscribe channel missed because its buffer
	// was full.
	Dropped uint64
	// Emitted counts, by kind and then by task ("" for events without
	// one), every event the client emitted since Open, whether or not a
	// channel received it: exact totals that a full channel cannot lose,
	// counted before any channel sees the event. The queuemaxprom and
	// queuemaxotel counters read them. Enqueues count one EventEnqueued
	// per job even when nobody subscribed; alerts are only evaluated, and
	// so only counted, while someone subscribes to EventAlert. Calls under
	// WithoutEvents emit and count nothing. Only kinds and tasks with
	// events are present.
	Emitted map[EventKind]map[string]uint64
}

// WithoutEvents returns a context under which enqueues and other calls made
// with it emit no events (queue-max's batch()). It is scoped to calls that
// use the context, so other goroutines and workers keep their events, and
// scopes nest naturally.
func WithoutEvents(ctx context.Context) context.Context { return engine.WithoutEvents(ctx) }

func eventsSuppressed(ctx context.Context) bool { return engine.Suppressed(ctx) }

// Subscribe returns a channel that receives the client's events of kinds
// (every kind if none is given), and a function that cancels the
// subscription and closes the channel. See SubscribeConfig for the buffer.
// It is the client's one event API.
//
//	events, cancel := c.Subscribe(queuemax.EventCompleted, queuemax.EventFailed)
//	defer cancel()
//	for ev := range events { ... }
//
// Events are sent after the change they describe has committed, in the
// order the goroutine that caused them emitted them; events from different
// goroutines (workers, enqueuers) interleave. A send never blocks: while
// the channel is full its events are dropped and counted in EventStats, so
// a slow reader cannot slow the queue; a program that must count every
// event reads EventStats.Emitted instead. Each receiver gets its own
// *Event. The channel is also closed by Client.Close. Subscribe panics on a
// kind not in EventKinds (a programming error). It is safe for concurrent
// use.
func (c *Client) Subscribe(kinds ...EventKind) (<-chan *Event, func()) {
	return c.SubscribeConfig(&SubscribeConfig{Kinds: kinds})
}

// SubscribeConfig is Subscribe with a buffer size; nil cfg means the
// defaults.
func (c *Client) SubscribeConfig(cfg *SubscribeConfig) (<-chan *Event, func()) {
	if cfg == nil {
		cfg = &SubscribeConfig{}
	}
	size := cfg.ChanSize
	if size <= 0 {
		size = DefaultSubscribeChanSize
	}
	return c.events.Subscribe("Subscribe", cfg.Kinds, size)
}

// EventStats returns the counts of the client's events and Subscribe
// channels.
func (c *Client) EventStats() EventStats {
	open, sent, dropped := c.events.Stats()
	return EventStats{Subscriptions: open, Sent: sent, Dropped: dropped, Emitted: c.events.Emitted()}
}

func (c *Client) emit(ctx context.Context, ev Event) { c.events.Emit(ctx, ev) }

func (c *Client) hasSubscribers(kind EventKind) bool { return c.events.Has(kind) }
