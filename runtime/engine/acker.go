package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// ack is a success waiting for its acknowledgement to commit.
type ack struct {
	rj     *runningJob
	raw    json.RawMessage
	result any
}

// acker acknowledges successes set-based: workers hand it their successes
// and go on to the next job; its loop commits everything that has
// gathered in one Store.Complete call (one transaction per shard, one
// statement on PostgreSQL), so the next flush gathers while one commits and
// claims overlap with acknowledgements. A job counts as done only once its
// acknowledgement has committed, lease-fenced: Config.Completed runs then,
// on the acknowledger's goroutine, and the job stays held (its lease
// renewed by heartbeats) until then.
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

// flush commits batch, retrying items that failed with a storage error,
// then settles each item.
func (a *acker) flush(batch []ack) {
	e := a.e
	ctx := context.WithoutCancel(e.jobCtx)
	params := make([]store.CompleteParams, len(batch))
	now := e.cfg.Now()
	for i, x := range batch {
		params[i] = store.CompleteParams{Lease: lease(x.rj.job), Result: x.raw, Keep: e.cfg.KeepCompleted, Now: now}
	}
	errs := e.cfg.Store.Complete(ctx, params)
	var retry []int
	for i, err := range errs {
		if transient(err) {
			retry = append(retry, i)
		}
	}
	for try := 0; len(retry) > 0 && e.ackBackoff(try); try++ {
		ps := make([]store.CompleteParams, len(retry))
		for k, i := range retry {
			ps[k] = params[i]
		}
		again := retry[:0]
		for k, err := range e.cfg.Store.Complete(ctx, ps) {
			errs[retry[k]] = err
			if transient(err) {
				again = append(again, retry[k])
			}
		}
		retry = again
	}
	for i, x := range batch {
		a.settle(x, errs[i])
	}
}

// settle records the committed (or rejected) acknowledgement of x.
func (a *acker) settle(x ack, err error) {
	e, j := a.e, x.rj.job
	ctx := context.WithoutCancel(x.rj.ctx)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		e.lostCnt.Add(1)
		e.log.WarnContext(ctx, "job lease lost; completion rejected", "task", j.Task, "job_id", int64(j.ID))
	case err != nil:
		e.log.ErrorContext(ctx, "record completion; the job is recovered as an orphan", "task", j.Task, "job_id", int64(j.ID), "err", err)
	default:
		e.processed.Add(1)
		if e.log.Enabled(ctx, slog.LevelDebug) {
			e.log.LogAttrs(ctx, slog.LevelDebug, "job completed", slog.String("task", j.Task), slog.Int64("job_id", int64(j.ID)))
		}
		e.cfg.Completed(ctx, j, x.result)
	}
	e.unhold(x.rj)
}
