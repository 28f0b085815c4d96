package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
)

// runningJob is a job the engine holds: running, or claimed and waiting
// for a slot.
type runningJob struct {
	job    *store.Job
	ctx    context.Context // the job's context, a child of Engine.jobCtx
	cancel context.CancelCauseFunc
	lost   atomic.Bool
	freed  atomic.Bool // its worker slot was given back
	// cancelReq is set once a cancel was requested for the job (Heartbeat
	// reported store.ErrCancelRequested, or CancelLocal).
	cancelReq atomic.Bool
	// batch collects the acknowledgements of the jobs started with this
	// one from the same claim and shard (nil: acknowledged alone); queued
	// is set, on the job's goroutine, once its ack joined the batch.
	batch  *ackBatch
	queued bool
}

// hold registers a claimed job: from now on heartbeats renew its lease
// and it counts as active, whether it runs at once or waits for a slot.
func (e *Engine) hold(j *store.Job) *runningJob {
	jctx, cancel := context.WithCancelCause(e.jobCtx)
	rj := &runningJob{job: j, ctx: jctx, cancel: cancel}
	e.mu.Lock()
	e.running[j.ID] = rj
	e.mu.Unlock()
	e.active.Add(1)
	return rj
}

// unhold forgets a held job.
func (e *Engine) unhold(rj *runningJob) {
	rj.cancel(nil)
	e.mu.Lock()
	delete(e.running, rj.job.ID)
	e.mu.Unlock()
	e.active.Add(-1)
}

// launch runs a held job on its own goroutine, taking a worker slot.
func (e *Engine) launch(rj *runningJob, t *breaker.Ticket) {
	if rj.lost.Load() {
		// Taken back while it waited for a slot: another worker owns it.
		if t != nil {
			t.Release()
		}
		e.lostCnt.Add(1)
		if rj.batch != nil {
			rj.batch.leave()
		}
		e.unhold(rj)
		return
	}
	e.executing.Add(1)
	e.jobWG.Go(func() {
		defer func() {
			if rj.batch != nil && !rj.queued {
				rj.batch.leave()
			}
			e.unhold(rj)
			e.freeSlot(rj)
		}()
		e.execute(rj, t)
	})
}

// freeSlot gives rj's worker slot back, once, and wakes the producer.
func (e *Engine) freeSlot(rj *runningJob) {
	if rj.freed.Swap(true) {
		return
	}
	e.executing.Add(-1)
	e.signalSlot()
}

// signalSlot wakes the producer without blocking.
func (e *Engine) signalSlot() {
	select {
	case e.slotFree <- struct{}{}:
	default:
	}
}

// execute runs one job and records its outcome; the breaker (or its probe
// ticket t) learns the outcome first.
func (e *Engine) execute(rj *runningJob, t *breaker.Ticket) {
	ctx, j := rj.ctx, rj.job
	result, err := e.cfg.Execute(ctx, j)
	e.freeSlot(rj)
	if err != nil && rj.cancelReq.Load() && e.cfg.Cancelled != nil {
		// Asked to cancel: the failure ends the job cancelled, even
		// while draining; a success stays a success.
		err = e.cfg.Cancelled(err)
	} else if err != nil && context.Cause(e.jobCtx) != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ErrStopping)) {
		// Cancelled by the drain timeout: give the job back unspent.
		if t != nil {
			t.Release()
		}
		e.release(rj)
		return
	}
	retryable := err != nil && e.cfg.Retryable(err)
	switch {
	case t != nil && err == nil:
		t.Success()
	case t != nil && retryable:
		t.Failure()
	case t != nil:
		t.Release()
	case err == nil:
		e.breakerFor(j.Task).Success()
	case retryable:
		e.breakerFor(j.Task).Failure()
	}
	e.finish(ctx, rj, result, err)
}

// finish records the outcome of an attempt.
func (e *Engine) finish(ctx context.Context, rj *runningJob, result any, jobErr error) {
	j := rj.job
	// Acknowledgements must reach the store even while draining.
	ackCtx := context.WithoutCancel(ctx)
	if rj.lost.Load() {
		e.lostCnt.Add(1)
		e.log.WarnContext(ackCtx, "job lease lost while running; result discarded", "task", j.Task, "job_id", int64(j.ID))
		return
	}
	if jobErr == nil {
		raw, err := e.cfg.Encode(result)
		if err != nil {
			jobErr = err // the job ran; a result that cannot be stored fails it for good
		} else {
			err = e.complete(ackCtx, rj, raw)
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				e.lostCnt.Add(1)
				e.log.WarnContext(ackCtx, "job lease lost; completion rejected", "task", j.Task, "job_id", int64(j.ID))
			case err != nil:
				e.log.ErrorContext(ackCtx, "record completion", "task", j.Task, "job_id", int64(j.ID), "err", err)
			default:
				e.processed.Add(1)
				e.log.LogAttrs(ackCtx, slog.LevelDebug, "job completed", slog.String("task", j.Task), slog.Int64("job_id", int64(j.ID)))
				e.cfg.Completed(ackCtx, j, result)
			}
			return
		}
	}
	dead, err := e.cfg.Fail(ackCtx, j, jobErr)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		e.lostCnt.Add(1)
		e.log.WarnContext(ackCtx, "job lease lost; failure rejected", "task", j.Task, "job_id", int64(j.ID))
	case err != nil:
		e.log.ErrorContext(ackCtx, "record failure", "task", j.Task, "job_id", int64(j.ID), "err", err)
	case dead:
		e.failed.Add(1)
	default:
		e.retried.Add(1)
	}
}

// complete commits j's success: with the acknowledgements of its batch
// when it has one, alone otherwise.
func (e *Engine) complete(ctx context.Context, rj *runningJob, raw []byte) error {
	if rj.batch != nil {
		rj.queued = true
		return rj.batch.ack(rj.job, raw)
	}
	return e.cfg.Store.Complete(ctx, []store.CompleteParams{{Lease: lease(rj.job), Result: raw, Keep: e.cfg.KeepCompleted, Now: e.cfg.Now()}})[0]
}

// requestCancel stops a held job a cancel was requested for: its handler's
// context is cancelled with cause ErrJobCancelled, and execute records the
// failure through Config.Cancelled.
func requestCancel(rj *runningJob) {
	rj.cancelReq.Store(true)
	rj.cancel(ErrJobCancelled)
}

// CancelLocal stops job id at once if this engine holds it (a cancel made
// in the process that runs the job); other processes learn of it from
// their heartbeats.
func (e *Engine) CancelLocal(id store.JobID) {
	e.mu.Lock()
	rj := e.running[id]
	e.mu.Unlock()
	if rj != nil {
		requestCancel(rj)
	}
}

// release returns a held job to pending without spending its attempt.
func (e *Engine) release(rj *runningJob) {
	err := e.cfg.Store.Release(context.WithoutCancel(e.jobCtx), []store.Lease{lease(rj.job)})[0]
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		e.log.Error("return unfinished job to pending", "job_id", int64(rj.job.ID), "err", err)
	}
}
