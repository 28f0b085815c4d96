package engine

import (
	"context"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Enqueued records the jobs ps that an insert stored as ids: an
// EventEnqueued per job that was stored (a duplicate of a unique job was
// not), or, with no subscriber, only the exact counts, without building
// events. Call it after the commit and before waking the workers, so that
// a job's enqueue event precedes its completion.
func (e *Events) Enqueued(ctx context.Context, ps []store.InsertParams, ids []queuemaxtype.JobID) {
	dup := func(i int) bool { return ps[i].Unique != nil && ps[i].Unique.Duplicate }
	if e.Has(queuemaxtype.EventEnqueued) {
		for i, id := range ids {
			if !dup(i) {
				e.Emit(ctx, Event{Kind: queuemaxtype.EventEnqueued, JobID: id, Shard: id.Shard(), Task: ps[i].Task})
			}
		}
		return
	}
	n := 0
	for i := range ps {
		if !dup(i) {
			n++
		}
		if i+1 == len(ps) || ps[i+1].Task != ps[i].Task {
			e.Count(ctx, queuemaxtype.EventEnqueued, ps[i].Task, n)
			n = 0
		}
	}
}
