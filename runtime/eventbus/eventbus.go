// Package eventbus is the engine of queuemax's event bus: asynchronous
// fan-out of published records to subscribers, each with a bounded buffer
// and a goroutine owned by the bus, a bounded history that links records
// by cause, and counters.
//
// Not API: import github.com/queuemax/queuemax instead.
package eventbus

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Options.
const (
	// DefaultBuffer is how many records a subscriber may have waiting.
	DefaultBuffer = 256
	// DefaultHistory is how many recent records the bus keeps.
	DefaultHistory = 1000
)

// Options configure a Bus. Zero fields mean their defaults.
type Options struct {
	// Buffer is how many records each subscriber may have waiting for its
	// callback; a record published while the buffer is full is dropped for
	// that subscriber and counted. Values below 1 mean DefaultBuffer.
	Buffer int
	// History is how many recent records History and WriteTree show and
	// cause links can reach. Values below 1 mean DefaultHistory.
	History int
	// OnPanic is called, on the subscriber's goroutine, after a callback
	// panicked and was recovered. Nil means the panic is only counted.
	OnPanic func(sub string, kind string, value any, stack []byte)
}

// Record is one published event with its bus bookkeeping.
type Record[E any] struct {
	// ID is unique per bus, starts at 1 and increases in publish order.
	ID uint64
	// Cause is the ID of the record that caused this one, 0 if none is
	// known. History reports links learned after publication; a record
	// delivered to a subscriber carries the cause known when it was
	// published.
	Cause uint64
	// Kind names the event; subscribers filter on it.
	Kind string
	// Key correlates records for cause links (for example one job); empty
	// means none.
	Key string
	// Level orders records of one key: a record's cause is the latest
	// record of its key with the highest level below its own.
	Level int
	// Time is when the event happened.
	Time time.Time
	// Event is the payload.
	Event E
}

// Stats counts what a bus did.
type Stats struct {
	// Published counts records accepted by Publish.
	Published uint64
	// ByKind counts Published by Kind.
	ByKind map[string]uint64
	// Delivered counts callbacks that ran (including ones that panicked).
	Delivered uint64
	// Dropped counts deliveries lost because a subscriber's buffer was
	// full.
	Dropped uint64
	// Panics counts callbacks that panicked.
	Panics uint64
	// LastEvent is the Time of the last record published, zero if none.
	LastEvent time.Time
	// Subscribers describes the current subscribers, oldest first.
	Subscribers []SubscriberStats
}

// SubscriberStats counts one subscriber's deliveries.
type SubscriberStats struct {
	ID        uint64 // in subscription order, from 1
	Name      string // what it subscribed to, e.g. a kind or a pattern
	Buffered  int    // records waiting for its callback
	Delivered uint64 // callbacks run
	Dropped   uint64 // records lost because its buffer was full
	Panics    uint64 // callbacks that panicked
}

// Bus fans records out to subscribers. It is safe for concurrent use.
// Publish never blocks on a subscriber.
type Bus[E any] struct {
	opts Options
	wg   sync.WaitGroup // subscriber goroutines

	mu        sync.Mutex
	closed    bool
	nextID    uint64 // ID of the last record published
	nextSub   uint64
	subs      []*sub[E] // in subscription order
	ring      []*node[E]
	index     map[string][]*node[E] // key → records in the ring, oldest first
	published uint64
	byKind    map[string]uint64
	dropped   uint64
	last      time.Time

	// Counted by subscriber goroutines without the lock, which Publish
	// holds on the queue's hot path.
	delivered, panics atomic.Uint64
}

type node[E any] struct {
	rec Record[E]
}

type sub[E any] struct {
	id    uint64
	name  string
	match func(kind string) bool
	fn    func(Record[E])
	// ch carries records to the subscriber's goroutine. Its only closer is
	// the bus (unsubscribe or Close), under b.mu, so Publish, which sends
	// under b.mu, never sends on a closed channel.
	ch chan Record[E]
	// stop, closed by unsubscribe, makes the goroutine discard what is
	// still buffered. Close does not close it: buffered records are
	// delivered before Close returns.
	stop              chan struct{}
	dropped           uint64 // guarded by the bus's mu
	delivered, panics atomic.Uint64
}

// New returns a bus with no subscribers.
func New[E any](o Options) *Bus[E] {
	if o.Buffer < 1 {
		o.Buffer = DefaultBuffer
	}
	if o.History < 1 {
		o.History = DefaultHistory
	}
	return &Bus[E]{opts: o, index: make(map[string][]*node[E]), byKind: make(map[string]uint64)}
}

// Publish records ev under kind and hands it to every subscriber whose
// match accepts kind, without blocking: a subscriber whose buffer is full
// misses it, which is counted. Records with a non-empty key are linked to
// their cause (see Record.Level), including records published earlier whose
// cause arrives late. Publish returns the record, and false after Close.
func (b *Bus[E]) Publish(kind, key string, level int, t time.Time, ev E) (Record[E], bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return Record[E]{}, false
	}
	b.nextID++
	n := &node[E]{rec: Record[E]{ID: b.nextID, Kind: kind, Key: key, Level: level, Time: t, Event: ev}}
	if key != "" {
		b.link(n)
	}
	b.remember(n)
	b.published++
	b.byKind[kind]++
	if t.After(b.last) {
		b.last = t
	}
	for _, s := range b.subs {
		if !s.match(kind) {
			continue
		}
		select {
		case s.ch <- n.rec:
		default:
			s.dropped++
			b.dropped++
		}
	}
	return n.rec, true
}

// link sets n's cause from the records of its key and makes n the cause of
// earlier records that it explains better (their cause arrived late).
func (b *Bus[E]) link(n *node[E]) {
	var parent *node[E]
	for _, o := range b.index[n.rec.Key] {
		if o.rec.Level < n.rec.Level && (parent == nil || o.rec.Level >= parent.rec.Level) {
			parent = o
		}
	}
	if parent != nil {
		n.rec.Cause = parent.rec.ID
	}
	for _, o := range b.index[n.rec.Key] {
		if o.rec.Level <= n.rec.Level {
			continue
		}
		if p := b.lookup(o.rec.Cause); o.rec.Cause == 0 || (p != nil && p.rec.Level < n.rec.Level) {
			o.rec.Cause = n.rec.ID
		}
	}
}

// remember adds n to the ring, evicting the oldest record when it is full.
func (b *Bus[E]) remember(n *node[E]) {
	if len(b.ring) < b.opts.History {
		b.ring = append(b.ring, n)
	} else {
		i := int((n.rec.ID - 1) % uint64(b.opts.History))
		old := b.ring[i]
		b.ring[i] = n
		if k := old.rec.Key; k != "" {
			b.index[k] = slices.DeleteFunc(b.index[k], func(x *node[E]) bool { return x == old })
			if len(b.index[k]) == 0 {
				delete(b.index, k)
			}
		}
	}
	if k := n.rec.Key; k != "" {
		b.index[k] = append(b.index[k], n)
	}
}

// lookup returns the record with id if it is still in the ring.
func (b *Bus[E]) lookup(id uint64) *node[E] {
	if id == 0 || id > b.nextID || b.nextID-id >= uint64(len(b.ring)) {
		return nil
	}
	return b.ring[int((id-1)%uint64(b.opts.History))]
}

// Subscribe calls fn, on a goroutine owned by the bus, with every record
// published from now on whose kind match accepts, in publish order. name
// describes the subscriber in Stats. The returned function unsubscribes:
// records still buffered are discarded and fn is not called again once
// the call it may be running returns. Subscribing to a closed bus does
// nothing.
func (b *Bus[E]) Subscribe(name string, match func(kind string) bool, fn func(Record[E])) (unsubscribe func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return func() {}
	}
	b.nextSub++
	s := &sub[E]{id: b.nextSub, name: name, match: match, fn: fn,
		ch: make(chan Record[E], b.opts.Buffer), stop: make(chan struct{})}
	b.subs = append(b.subs, s)
	b.wg.Go(func() { b.deliver(s) })
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			close(s.stop)
			if i := slices.Index(b.subs, s); i >= 0 {
				b.subs = slices.Delete(b.subs, i, i+1)
				close(s.ch)
			}
		})
	}
}

// deliver runs s's callbacks until its channel is closed, or until it is
// unsubscribed.
func (b *Bus[E]) deliver(s *sub[E]) {
	for {
		select {
		case <-s.stop:
			return
		case rec, ok := <-s.ch:
			if !ok {
				return
			}
			select {
			case <-s.stop:
				return
			default:
			}
			if b.call(s, rec) {
				s.panics.Add(1)
				b.panics.Add(1)
			}
			s.delivered.Add(1)
			b.delivered.Add(1)
		}
	}
}

func (b *Bus[E]) call(s *sub[E], rec Record[E]) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			if b.opts.OnPanic != nil {
				b.opts.OnPanic(s.name, rec.Kind, r, debug.Stack())
			}
		}
	}()
	s.fn(rec)
	return false
}

// Close stops accepting records, lets every subscriber's goroutine deliver
// what it has buffered, and waits for them to exit; a callback that never
// returns blocks Close. Close is idempotent and must not be called from a
// callback.
func (b *Bus[E]) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		for _, s := range b.subs {
			close(s.ch)
		}
		b.subs = nil
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// Stats returns a snapshot of the counters.
func (b *Bus[E]) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Stats{Published: b.published, ByKind: make(map[string]uint64, len(b.byKind)),
		Delivered: b.delivered.Load(), Dropped: b.dropped, Panics: b.panics.Load(), LastEvent: b.last}
	for k, v := range b.byKind {
		st.ByKind[k] = v
	}
	for _, s := range b.subs {
		st.Subscribers = append(st.Subscribers, SubscriberStats{ID: s.id, Name: s.name, Buffered: len(s.ch),
			Delivered: s.delivered.Load(), Dropped: s.dropped, Panics: s.panics.Load()})
	}
	return st
}

// History returns the records kept, oldest first, with the cause links
// known now.
func (b *Bus[E]) History() []Record[E] {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Record[E], 0, len(b.ring))
	first := b.nextID - uint64(len(b.ring)) + 1
	for id := first; id <= b.nextID; id++ {
		out = append(out, b.lookup(id).rec)
	}
	return out
}

// WriteTree writes the history as a forest: each record under its cause,
// in publish order, one line per record from label. A record whose cause
// has left the history is a root, marked with the cause's ID.
func WriteTree[E any](w io.Writer, recs []Record[E], label func(Record[E]) string) error {
	have := make(map[uint64]bool, len(recs))
	for _, r := range recs {
		have[r.ID] = true
	}
	children := make(map[uint64][]Record[E])
	var roots []Record[E]
	for _, r := range recs {
		if r.Cause != 0 && have[r.Cause] {
			children[r.Cause] = append(children[r.Cause], r)
		} else {
			roots = append(roots, r)
		}
	}
	var sb strings.Builder
	var walk func(r Record[E], prefix, branch string)
	walk = func(r Record[E], prefix, branch string) {
		sb.WriteString(prefix)
		sb.WriteString(branch)
		fmt.Fprintf(&sb, "#%d %s", r.ID, label(r))
		if r.Cause != 0 && !have[r.Cause] {
			fmt.Fprintf(&sb, " (caused by #%d, no longer in history)", r.Cause)
		}
		sb.WriteByte('\n')
		switch branch {
		case "├─ ":
			prefix += "│  "
		case "└─ ":
			prefix += "   "
		}
		kids := children[r.ID]
		for i, k := range kids {
			if i == len(kids)-1 {
				walk(k, prefix, "└─ ")
			} else {
				walk(k, prefix, "├─ ")
			}
		}
	}
	for _, r := range roots {
		walk(r, "", "")
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
