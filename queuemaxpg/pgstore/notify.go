package pgstore

import (
	"context"
	"sync"
	"time"
)

// notifyWindow bounds how often the store's own inserts notify other
// processes. A NOTIFY is not free: from just before its commit until just
// after, it holds a database-wide lock so that notifying commits line up
// (concurrent inserts' commits then queue behind each other instead of
// sharing a flush), and each one wakes every listening backend and its
// client. So an insert notifies only when none did in the last window
// (the leading edge: a lone enqueue wakes idle workers at once); an insert
// inside the window skips it. A notification covers every insert that
// committed before its own insert started, so once a quiet insert has
// committed, the first insert after the window notifies for it too; if
// none comes within notifyGrace, the store sends a notification of its own
// (the trailing edge). A quiet insert's job thus waits at most
// notifyWindow + notifyGrace longer before other processes' idle workers
// look, and a steady stream of enqueues costs one notifying insert per
// window and no extra statement. Inserts into a caller's transaction or in
// a batch holding unique jobs, periodic slots and jobs made ready again
// always notify.
const (
	notifyWindow = 2 * time.Millisecond
	notifyGrace  = time.Millisecond
)

// notifyGate decides, per insert statement, whether it notifies.
type notifyGate struct {
	send   func()        // sends the trailing notification
	window time.Duration // notifyWindow (tests lengthen it)

	mu     sync.Mutex
	last   time.Time // when the last notification was sent
	armed  bool      // a trailing notification is due
	timer  *time.Timer
	closed bool
	firing sync.WaitGroup // armed timers, until their fire returns
}

func newNotifyGate(send func()) *notifyGate { return &notifyGate{send: send, window: notifyWindow} }

// loud reports whether an insert sent now should notify, and if so
// counts it as the window's notification. It covers the quiet inserts
// that committed before now, so their trailing notification is called
// off; if the insert then fails, its caller calls quietDone.
func (g *notifyGate) loud(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.last) < g.window && !g.closed {
		return false
	}
	g.last = now
	if g.armed && g.timer.Stop() {
		g.armed = false
		g.firing.Done() // its fire will not run
	}
	return true
}

// quietDone records that an insert that did not notify has committed (or
// that a notifying one failed): unless an insert notifies first, a
// notification follows notifyGrace after the end of the current window.
func (g *notifyGate) quietDone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed || g.closed {
		return
	}
	g.armed = true
	g.firing.Add(1)
	g.timer = time.AfterFunc(max(0, g.window+notifyGrace-time.Since(g.last)), g.fire)
}

func (g *notifyGate) fire() {
	defer g.firing.Done()
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return // close took it over
	}
	g.armed = false
	g.last = time.Now()
	g.mu.Unlock()
	g.send()
}

// close stops the gate once any notification being sent is out; it
// reports whether a trailing notification was still due, which the caller
// then sends itself. Later inserts notify.
func (g *notifyGate) close() (due bool) {
	g.mu.Lock()
	g.closed = true
	due = g.armed
	g.armed = false
	if g.timer != nil && g.timer.Stop() {
		g.firing.Done() // its fire will not run
	}
	g.mu.Unlock()
	g.firing.Wait()
	return due
}

// notify sends the store's notification on its own: the trailing edge of
// a window.
func (s *Store) notify(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A lost notification delays other processes' idle workers by at most
	// their poll interval; there is nobody to report the error to.
	_, _ = s.pool.Exec(ctx, `SELECT pg_notify($1::text, '')`, s.schema+".jobs")
}
