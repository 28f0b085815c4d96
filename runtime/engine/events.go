package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// Event is a queue event (the root package re-exports the type).
type Event = queuemaxtype.Event

// EventKind names an event.
type EventKind = queuemaxtype.EventKind

// Events is a client's event registry: the Subscribe channels, and exact
// counts of every event emitted. Emit sends on the goroutine that caused
// the event, after the change has committed, and never blocks. The zero
// value is not usable: create it with NewEvents.
type Events struct {
	log *slog.Logger
	now func() time.Time

	mu     sync.RWMutex
	subs   map[EventKind][]*subscription // in subscription order, copied on write
	open   int                           // open channels, guarded by mu
	closed bool                          // CloseAll has run

	sent, dropped atomic.Uint64
	counts        sync.Map // task → *kindCounts
}

// kindCounts counts one task's events by kind (the index in EventKinds).
type kindCounts [16]atomic.Uint64

var kindIndex = func() map[EventKind]int {
	m := make(map[EventKind]int, len(queuemaxtype.EventKinds))
	for i, k := range queuemaxtype.EventKinds {
		m[k] = i
	}
	if len(m) > len(kindCounts{}) {
		panic("engine: kindCounts too small for EventKinds")
	}
	return m
}()

// NewEvents returns an empty registry that logs through log and stamps
// events with now.
func NewEvents(log *slog.Logger, now func() time.Time) *Events {
	return &Events{log: log, now: now, subs: make(map[EventKind][]*subscription)}
}

// subscription is one Subscribe channel.
type subscription struct {
	mu      sync.Mutex  // orders sends against the close
	ch      chan *Event // closed once, under mu, by cancel or CloseAll
	closed  bool        // guarded by mu
	dropped atomic.Uint64
}

// send puts ev on s's channel without blocking; full means it was full.
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

// WithoutEvents returns a context under which calls emit no events.
func WithoutEvents(ctx context.Context) context.Context {
	return context.WithValue(ctx, noEventsKey{}, true)
}

// Suppressed reports whether ctx comes from WithoutEvents.
func Suppressed(ctx context.Context) bool {
	v, _ := ctx.Value(noEventsKey{}).(bool)
	return v
}

// Subscribe returns a channel of size buffered events of kinds (every kind
// when empty) and the function that cancels it and closes the channel.
// caller names the API in the panic for an unknown kind.
func (e *Events) Subscribe(caller string, kinds []EventKind, size int) (<-chan *Event, func()) {
	if len(kinds) == 0 {
		kinds = queuemaxtype.EventKinds
	}
	for _, kind := range kinds {
		if _, ok := kindIndex[kind]; !ok {
			panic(fmt.Sprintf("queuemax: %s: unknown event kind %q (valid: %v)", caller, kind, queuemaxtype.EventKinds))
		}
	}
	s := &subscription{ch: make(chan *Event, size)}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		// CloseAll has run: nothing will be sent, so hand back a closed
		// channel.
		s.closed = true // s is not shared yet
		close(s.ch)
		return s.ch, func() {}
	}
	for _, kind := range kinds {
		if !slices.Contains(e.subs[kind], s) {
			e.subs[kind] = append(slices.Clip(e.subs[kind]), s)
		}
	}
	e.open++
	var once sync.Once
	return s.ch, func() {
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
func (e *Events) closeLocked(s *subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		e.open--
		close(s.ch)
	}
}

// CloseAll closes every channel; later Subscribes get a closed one.
func (e *Events) CloseAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for kind, subs := range e.subs {
		for _, s := range subs {
			e.closeLocked(s)
		}
		delete(e.subs, kind)
	}
}

// Stats returns the open channels and the events sent and dropped.
func (e *Events) Stats() (open int, sent, dropped uint64) {
	e.mu.RLock()
	open = e.open
	e.mu.RUnlock()
	return open, e.sent.Load(), e.dropped.Load()
}

// Emitted returns how many events of each kind each task ("" for events
// without a task) emitted: exact totals, counted before any channel sees
// the event, whether or not anyone subscribed.
func (e *Events) Emitted() map[EventKind]map[string]uint64 {
	out := make(map[EventKind]map[string]uint64)
	e.counts.Range(func(k, v any) bool {
		c := v.(*kindCounts)
		for i, kind := range queuemaxtype.EventKinds {
			if n := c[i].Load(); n > 0 {
				if out[kind] == nil {
					out[kind] = make(map[string]uint64)
				}
				out[kind][k.(string)] = n
			}
		}
		return true
	})
	return out
}

// count adds n events of kind to task's count.
func (e *Events) count(kind EventKind, task string, n uint64) {
	v, ok := e.counts.Load(task)
	if !ok {
		v, _ = e.counts.LoadOrStore(task, new(kindCounts))
	}
	v.(*kindCounts)[kindIndex[kind]].Add(n)
}

// Count counts n events of kind for task without sending them: an emitter
// of many like events (an enqueue of many jobs) that nobody subscribed to
// counts them at once.
func (e *Events) Count(ctx context.Context, kind EventKind, task string, n int) {
	if n > 0 && !Suppressed(ctx) {
		e.count(kind, task, uint64(n))
	}
}

// Has reports whether any channel receives kind.
func (e *Events) Has(kind EventKind) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.subs[kind]) > 0
}

// Emit counts ev and sends it to the channels of its kind, unless ctx comes
// from WithoutEvents. A full channel misses it (counted, and logged once
// per channel).
func (e *Events) Emit(ctx context.Context, ev Event) {
	if Suppressed(ctx) {
		return
	}
	e.count(ev.Kind, ev.Task, 1)
	e.mu.RLock()
	subs := e.subs[ev.Kind] // copied on write: safe to read unlocked
	e.mu.RUnlock()
	if len(subs) == 0 {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = e.now()
	}
	for _, s := range subs {
		evc := ev
		sent, full := s.send(&evc)
		switch {
		case sent:
			e.sent.Add(1)
		case full:
			e.dropped.Add(1)
			if s.dropped.Add(1) == 1 {
				e.log.WarnContext(ctx, "event subscriber is not keeping up; dropping its events (counted in Client.EventStats)",
					"event", string(ev.Kind), "buffer", cap(s.ch))
			}
		}
	}
}
