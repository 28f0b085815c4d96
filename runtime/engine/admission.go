package engine

import (
	"context"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Admission is what decides whether a claimed job may start and what its
// end gives back: the global and per-key limits (limits.go,
// limits_key.go), the queue limits (limits_queue.go), the rate tokens
// moved to the handler's start (limits_stamp.go) and the breakers'
// probes (breakers.go). The engine's workers call it at a job's start and
// end, through admitStart, admitEnd and admitDrop; a claim round
// through admitTake (the round's starts), admitClaim (one group's jobs
// under its limits) and admitSettle (what the round did not use).
//
// (Issue 30 item 3, first steps: the parts are still the engine's
// fields, and the planning's breaker gate and the claim's queue filter
// still call them directly; see producer.go's plan and claimFor.)

// admitStart waits until j may start in this process (a free global
// slot of the process) and moves its rate tokens to now. It returns false,
// having given back what j held, when j's breaker holds it: it opened
// after j was claimed, and only its probe may run (the stored row is the
// breaker's one state; the caller returns j to pending unspent).
func (e *Engine) admitStart(j *store.Job, probe bool) bool {
	e.glim.start(j) // waits for a free global slot of the process
	if e.brk.holds(j.Task, probe) {
		e.glim.ended(j, true)
		e.qlim.ended(j)
		e.stamp.drop(j.ID)
		return false
	}
	e.stamp.begun(j.ID)
	return true
}

// admitEnd gives back what j's run held: its handler returned.
func (e *Engine) admitEnd(j *store.Job) {
	e.glim.ended(j, true) // the job no longer runs: its global slot is free
	e.qlim.ended(j)
}

// admitDrop gives back what a claimed job held that will not run here
// (taken back, or returned to pending unstarted): its slots, its rate
// token's move, and its breaker probe.
func (e *Engine) admitDrop(j *store.Job, probe bool) {
	if probe {
		e.brk.releaseProbe(j.Task)
	}
	e.glim.ended(j, false)
	e.qlim.ended(j)
	e.stamp.drop(j.ID)
}

// admitTake takes the round's starts (for n jobs at now) from the
// stores' limits: the queue limits' plan and take, the tasks' global
// take, in as few store calls as they allow. It returns the groups with
// their grants and how soon a group left out may be granted.
func (p *producer) admitTake(ctx context.Context, groups []claimGroup, n int, now time.Time) ([]claimGroup, time.Duration) {
	e := p.e
	retryIn := e.qlim.plan(ctx, n, now) // limits_queue.go
	if e.qlim.requeueAsked() {
		p.releaseQueued() // a changed queue rule binds on the prefetched jobs too
	}
	if e.glim != nil {
		var r time.Duration
		groups, r = e.glim.take(ctx, groups, now)
		retryIn = min(retryIn, r)
	}
	return groups, min(retryIn, e.qlim.take(ctx, now))
}

// admitClaim claims up to room jobs of group g under its limits (a task
// limited per key claims key by key, limits_key.go), appends to unused
// what its grant did not use, and releases a breaker probe that found
// no job. It returns the jobs and how soon a key left out may be granted.
func (p *producer) admitClaim(ctx context.Context, g claimGroup, room int, now time.Time, unused []store.LimitGive) ([]*store.Job, time.Duration, []store.LimitGive) {
	e := p.e
	retryIn := time.Hour
	var jobs []*store.Job
	keyed := g.global && e.glim.keyBy(g.tasks[0]) != ""
	switch {
	case room > 0 && keyed:
		jobs, retryIn = e.glim.claimKeyed(ctx, p, g, room, now)
	case room > 0:
		jobs, _ = p.claimFor(ctx, g, room, now)
	}
	if g.global && !keyed {
		unused = e.glim.give(unused, g, room, jobs)
	}
	if g.probe && len(jobs) == 0 {
		e.brk.releaseProbe(g.tasks[0]) // a probe that finds no job must not wedge the breaker
	}
	return jobs, retryIn, unused
}

// admitSettle gives back what a round's grants did not use, the queues'
// and the tasks' in one call.
func (e *Engine) admitSettle(ctx context.Context, unused []store.LimitGive) {
	unused = e.qlim.settle(unused) // limits_queue.go: the queues' gives join the tasks'
	if e.glim != nil {
		e.glim.settle(ctx, unused)
	} else {
		e.qlim.give(ctx, unused)
	}
}
