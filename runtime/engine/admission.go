package engine

import "github.com/queuemax/queuemax/runtime/store"

// Admission is what decides whether a claimed job may start and what its
// end gives back: the global and per-key limits (limits.go,
// limits_key.go), the queue limits (limits_queue.go), the rate tokens
// moved to the handler's start (limits_stamp.go) and the breakers'
// probes (breakers.go). The engine's workers call it at a job's start and
// end, through these three methods only.
//
// (Issue 30 item 3, first step: the planning and claim calls of the
// producer still go to each part directly.)

// admitStart waits until j may start in this process (a free global
// slot of the process) and moves its rate tokens to now.
func (e *Engine) admitStart(j *store.Job) {
	e.glim.start(j) // waits for a free global slot of the process
	e.stamp.begun(j.ID)
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
