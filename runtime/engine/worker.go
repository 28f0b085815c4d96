package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// runningJob is a job the engine holds: queued for a worker, running, or
// finished and waiting for its acknowledgement to commit.
type runningJob struct {
	job    *store.Job
	ctx    context.Context // the job's context, a child of Engine.jobCtx
	cancel context.CancelCauseFunc
	probe  bool // the job is its breaker's half-open probe
	lost   atomic.Bool
	// cancelReq is set once a cancel was requested for the job (Heartbeat
	// reported store.ErrCancelRequested, or CancelLocal).
	cancelReq atomic.Bool
}

// hold registers a claimed job: from now on heartbeats renew its lease
// and it counts as active until unhold, whether it runs at once, waits for
// a worker or waits for its acknowledgement.
func (e *Engine) hold(j *store.Job, probe bool) *runningJob {
	jctx, cancel := context.WithCancelCause(e.jobCtx)
	rj := &runningJob{job: j, ctx: jctx, cancel: cancel, probe: probe}
	e.mu.Lock()
	e.running[j.ID] = rj
	e.mu.Unlock()
	e.active.Add(1)
	e.jobWG.Add(1)
	e.adm.Held(j.Queue, 1)
	return rj
}

// unhold forgets a held job.
func (e *Engine) unhold(rj *runningJob) {
	rj.cancel(nil)
	e.mu.Lock()
	delete(e.running, rj.job.ID)
	e.mu.Unlock()
	e.active.Add(-1)
	e.jobWG.Done()
	e.adm.Held(rj.job.Queue, -1)
}

// ensureWorkers starts workers until there are as many as jobs may run at
// once. Workers are long-lived: each takes the next queued job, runs it
// and hands a success to the acknowledger, without a goroutine per job.
// When the limit drops, the workers above it exit after their job.
func (e *Engine) ensureWorkers() {
	limit := e.limit.Load()
	if e.workers.Load() >= limit {
		return
	}
	e.poolMu.Lock()
	defer e.poolMu.Unlock()
	for ; e.workers.Load() < limit; e.workers.Add(1) {
		e.workWG.Go(e.work)
	}
}

// work is one worker's loop: it runs queued jobs until the queue closes
// or the pool is above the limit.
func (e *Engine) work() {
	for {
		if e.shrink() {
			return
		}
		rj, ok := <-e.queue
		if !ok {
			return
		}
		e.runJob(rj)
	}
}

// shrink retires the calling worker when the pool is larger than the
// limit.
func (e *Engine) shrink() bool {
	if e.workers.Load() <= e.limit.Load() { // confirmed under the lock
		return false
	}
	e.poolMu.Lock()
	defer e.poolMu.Unlock()
	if e.workers.Load() <= e.limit.Load() {
		return false
	}
	e.workers.Add(-1)
	return true
}

// runJob runs one dequeued job: its handler, then the outcome.
func (e *Engine) runJob(rj *runningJob) {
	if rj.lost.Load() {
		// Taken back while it waited for a worker: another worker owns it.
		e.lostCnt.Add(1)
		e.adm.Drop(rj.job, rj.probe)
		e.dequeued()
		e.unhold(rj)
		return
	}
	if !e.adm.Start(rj.job, rj.probe) { // waits for a free global slot of the process
		e.release(rj) // its breaker opened since the claim: back to pending, unspent
		e.dequeued()
		e.unhold(rj)
		return
	}
	e.executing.Add(1)
	result, err := e.cfg.Exec.Execute(rj.ctx, rj.job)
	e.executing.Add(-1)
	e.adm.End(rj.job)
	e.dequeued()
	e.outcome(rj, result, err)
}

// dequeued counts a job that left the queue (ran or was dropped) and wakes
// the producer once the queue runs low.
func (e *Engine) dequeued() {
	if e.inflight.Add(-1) < e.lowWater.Load() {
		e.signalSlot()
	}
}

// signalSlot wakes the producer without blocking.
func (e *Engine) signalSlot() {
	select {
	case e.slotFree <- struct{}{}:
	default:
	}
}

// outcome records the outcome of an attempt; the task's breaker learns
// it first (runtime/admission: only dependency failures count). A success goes to the acknowledger, a
// failure is finished here, on the worker's goroutine; both through
// Executor.Finish.
func (e *Engine) outcome(rj *runningJob, result any, err error) {
	j := rj.job
	if err != nil && rj.cancelReq.Load() {
		// Asked to cancel: the failure ends the job cancelled, even
		// while draining; a success stays a success.
		err = cancelledError(err)
	} else if err != nil && context.Cause(e.jobCtx) != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ErrStopping)) {
		// Cancelled by the drain timeout: give the job back unspent.
		if rj.probe {
			e.adm.ReleaseProbe(j.Task)
		}
		e.release(rj)
		e.unhold(rj)
		return
	}
	e.adm.Record(j, err, rj.probe)
	if rj.lost.Load() {
		e.lostCnt.Add(1)
		e.out.fail(rj.ctx, slog.LevelWarn, "lost leases", "job lease lost while running; result discarded", store.ErrLeaseLost, "task", j.Task, "job_id", int64(j.ID))
		e.unhold(rj)
		return
	}
	// Hooks and logs see the job's values, but failures must reach the
	// store even while draining.
	x := ack{rj: rj, att: Attempt{Job: j, Ctx: context.WithoutCancel(rj.ctx), Result: result, Err: err, Ran: true}}
	e.cfg.Exec.Prepare(&x.att) // encode on this goroutine
	if x.att.Succeeded() {
		e.acks.add(x)
		return
	}
	e.fail(&x.att)
	e.unhold(rj)
}

// fail finishes a failed attempt, retrying a transient storage error with
// a short bounded backoff (see ackRetry); a lost lease is final.
func (e *Engine) fail(a *Attempt) {
	j, ctx := a.Job, a.Ctx
	e.cfg.Exec.Finish(ctx, []*Attempt{a}, FinishOpts{Retry: e.ackBackoff, Recorded: func(_ int, err error) {
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			e.lostCnt.Add(1)
			e.out.fail(ctx, slog.LevelWarn, "lost leases", "job lease lost; failure rejected", store.ErrLeaseLost, "task", j.Task, "job_id", int64(j.ID))
		case err != nil:
			e.out.fail(ctx, slog.LevelError, "failure records", "record failure; the job is recovered as an orphan", err, "task", j.Task, "job_id", int64(j.ID))
		case a.Fail.Dead:
			e.failed.Add(1)
		default:
			e.retried.Add(1)
		}
	}})
}

// cancelledError maps the error of a handler whose job a cancel was
// requested for to Cancel(err), so that it ends cancelled, not retried or
// dead.
func cancelledError(err error) error {
	if _, ok := errors.AsType[*queuemaxtype.CancelError](err); ok {
		return err
	}
	return queuemaxtype.Cancel(fmt.Errorf("%w: %w", ErrJobCancelled, err))
}

// requestCancel stops a held job a cancel was requested for: its handler's
// context is cancelled with cause ErrJobCancelled, and outcome records the
// failure as a cancellation.
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
	err := e.cfg.Store.Release(context.WithoutCancel(e.jobCtx), []store.Lease{Lease(rj.job)})[0]
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		e.log.Error("return unfinished job to pending", "job_id", int64(rj.job.ID), "err", err)
	}
}
