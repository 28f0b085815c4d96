package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// alertCheckEvery bounds how often enqueues count pending jobs for the
// alert: an enqueue that takes pending over the threshold raises
// EventAlert within alertCheckEvery, in a process that only enqueues too.
const alertCheckEvery = 100 * time.Millisecond

// Alerts raises EventAlert while more jobs wait (pending plus scheduled)
// than Threshold: on the rising edge, then at most once a minute while
// the count stays high. Enqueues check it throttled (Check), the engine's
// maintenance unthrottled at each round. Create it with NewAlerts.
type Alerts struct {
	st        store.Store
	ev        *Events
	threshold int // negative: off
	now       func() time.Time
	log       *slog.Logger

	mu      sync.Mutex
	at      time.Time   // last check (wall clock, for the throttle)
	timer   *time.Timer // the pending trailing check, if any
	high    bool        // pending was above the threshold at the last check
	sent    time.Time   // last alert event
	stopped bool
}

// NewAlerts returns the alert check of a client: threshold (negative:
// off) over the jobs waiting in st, raised on ev.
func NewAlerts(st store.Store, ev *Events, threshold int, now func() time.Time, log *slog.Logger) *Alerts {
	return &Alerts{st: st, ev: ev, threshold: threshold, now: now, log: log}
}

// Check emits EventAlert when the waiting jobs exceed the threshold.
// Checks run at most once per alertCheckEvery (force skips that
// throttle); a check that falls inside the throttle schedules one
// trailing check, so the last enqueue of a burst is always counted. The
// count is one indexed count per shard.
func (a *Alerts) Check(ctx context.Context, force bool) {
	if a == nil || a.threshold < 0 || !a.ev.Has(queuemaxtype.EventAlert) || Suppressed(ctx) {
		return
	}
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	if !force {
		if wait := alertCheckEvery - time.Since(a.at); wait > 0 {
			if a.timer == nil {
				bg := context.WithoutCancel(ctx)
				a.timer = time.AfterFunc(wait, func() {
					a.mu.Lock()
					a.timer = nil
					a.mu.Unlock()
					a.Check(bg, false)
				})
			}
			a.mu.Unlock()
			return
		}
	}
	a.at = time.Now()
	a.mu.Unlock()
	pending, err := a.st.WaitingCount(ctx)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
			a.log.WarnContext(ctx, "alert check: count pending jobs", "err", err)
		}
		return
	}
	now := a.now()
	a.mu.Lock()
	high := pending > int64(a.threshold)
	send := high && !a.stopped && (!a.high || now.Sub(a.sent) >= time.Minute)
	a.high = high
	if send {
		a.sent = now
	}
	a.mu.Unlock()
	if send {
		a.ev.Emit(ctx, Event{Kind: queuemaxtype.EventAlert, AlertType: "QUEUE_SIZE", Pending: pending, Threshold: a.threshold})
	}
}

// Stop ends the checks: a trailing one is cancelled, later ones do
// nothing (the client closed).
func (a *Alerts) Stop() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}
