package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// ack is a success waiting for its acknowledgement to commit: its
// attempt, already prepared (the result encoded) by the worker.
type ack struct {
	rj  *runningJob
	att Attempt
}

// acker acknowledges successes set-based: workers hand it their successes
// and go on to the next job; its loop commits everything that has
// gathered in one Store.Complete call (one transaction per shard, one
// statement on PostgreSQL), so the next flush gathers while one commits and
// claims overlap with acknowledgements. A flush is one Executor.Finish. A
// job counts as done only once its acknowledgement has committed,
// lease-fenced: its event and Hooks.OnComplete run then, on the
// acknowledger's goroutine, and the job stays held (its lease renewed by
// heartbeats) until then.
type acker struct {
	e       *Engine
	mu      sync.Mutex
	pending []ack
	spare   []ack // the previous flush's slice, reused
	wake    chan struct{}
	stopped bool // after stop, add flushes on the caller's goroutine
	done    chan struct{}
}

func newAcker(e *Engine) *acker {
	return &acker{e: e, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add queues a success for the next flush.
func (a *acker) add(x ack) {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		a.flush([]ack{x})
		return
	}
	a.pending = append(a.pending, x)
	first := len(a.pending) == 1
	a.mu.Unlock()
	if first {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// run flushes whatever has gathered until stop is closed and nothing is
// pending.
func (a *acker) run(stop <-chan struct{}) {
	defer close(a.done)
	for {
		select {
		case <-a.wake:
		case <-stop:
			a.mu.Lock()
			a.stopped = true
			a.mu.Unlock()
			a.RunOnce()
			return
		}
		a.RunOnce()
	}
}

// RunOnce flushes the acknowledgements gathered so far, if any, and
// reports how many it flushed.
func (a *acker) RunOnce() int {
	a.mu.Lock()
	batch := a.pending
	a.pending = a.spare[:0]
	a.spare = nil
	a.mu.Unlock()
	if len(batch) == 0 {
		a.mu.Lock()
		a.spare = batch
		a.mu.Unlock()
		return 0
	}
	a.flush(batch)
	clear(batch)
	a.mu.Lock()
	a.spare = batch[:0]
	a.mu.Unlock()
	return len(batch)
}

// ackRetry are the waits before the retries of an acknowledgement (or a
// failure record) that failed with a storage error: a bounded backoff,
// about 10 s in all, long enough to ride out a database server's restart
// (the job stays held meanwhile and heartbeats keep its lease once the
// server is back), after which the job is left to orphan recovery. A
// lost lease is never retried: the fence makes a late retry harmless.
var ackRetry = []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second}

// transient reports whether an acknowledgement's error may pass on retry:
// a storage error, not a lost lease or a closed store.
func transient(err error) bool {
	return err != nil && !errors.Is(err, store.ErrLeaseLost) && !errors.Is(err, store.ErrClosed)
}

// ackBackoff waits before retry try+1 of an acknowledgement and reports
// whether to retry at all. An aborted drain cuts the wait short but still
// retries once.
func (e *Engine) ackBackoff(try int) bool {
	if try >= len(ackRetry) {
		return false
	}
	t := time.NewTimer(ackRetry[try])
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.abort:
		return try == 0
	}
	return true
}

// flush finishes batch in one Executor.Finish, retrying items that failed
// with a storage error, then settles each item.
func (a *acker) flush(batch []ack) {
	e := a.e
	atts := make([]*Attempt, len(batch))
	for i := range batch {
		atts[i] = &batch[i].att
	}
	e.cfg.Exec.Finish(context.WithoutCancel(e.jobCtx), atts, FinishOpts{Retry: e.ackBackoff, Recorded: func(i int, err error) {
		a.settle(batch[i], err)
	}})
	for i := range batch {
		e.unhold(batch[i].rj)
	}
}

// settle counts the committed (or rejected) acknowledgement of x; Finish
// then emits its event and runs its hook.
func (a *acker) settle(x ack, err error) {
	e, j := a.e, x.rj.job
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		e.lostCnt.Add(1)
		e.out.fail(x.att.Ctx, slog.LevelWarn, "lost leases", "job lease lost; completion rejected", store.ErrLeaseLost, "task", j.Task, "job_id", int64(j.ID))
	case err != nil:
		e.out.fail(x.att.Ctx, slog.LevelError, "completions", "record completion; the job is recovered as an orphan", err, "task", j.Task, "job_id", int64(j.ID))
	default:
		e.out.ok(x.att.Ctx, "completions")
		e.processed.Add(1)
	}
}
