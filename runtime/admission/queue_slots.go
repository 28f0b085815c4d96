package admission

// The queue limits' pooled slots given back when idle, the breaker probe
// among a queue's claims, and the starts left per queue in a round.

import (
	"context"
	"errors"
	"log/slog"

	"github.com/queuemax/queuemax/runtime/store"
)

// idleSpare takes out the pooled slots no job holds that were not used
// since the last call (all of them with all), to give back.
func (q *queueLimits) idleSpare(all bool) []store.LimitGive {
	q.mu.Lock()
	defer q.mu.Unlock()
	var gives []store.LimitGive
	for name := range q.count {
		if q.pooled[name] && (all || !q.touched[name]) {
			gives = q.spare(gives, name)
		}
	}
	clear(q.touched)
	return gives
}

// Close gives back the spare slots once the engine stopped.
func (q *queueLimits) Close(ctx context.Context) { q.give(ctx, q.idleSpare(true)) }

// probed applies the round's queue grants to a breaker probe's claim
// (ClaimProbe knows no queue limits): a job of a limited queue without a
// start left goes back to pending, unspent; the others count against
// their grants.
func (q *queueLimits) probed(ctx context.Context, jobs []*store.Job) []*store.Job {
	if q == nil || len(q.round) == 0 || len(jobs) == 0 {
		return jobs
	}
	out := jobs[:0:0]
	var back []store.Lease
	for _, j := range jobs {
		if g := q.round[store.QueueOf(j.Queue)]; g != nil && g.used >= g.granted {
			back = append(back, store.Lease{ID: j.ID, Token: j.Lease, WorkerID: j.WorkerID})
			continue
		}
		out = append(out, j)
	}
	if len(back) > 0 {
		for _, err := range q.e.cfg.Store.Release(context.WithoutCancel(ctx), back) {
			if err != nil && !errors.Is(err, store.ErrLeaseLost) {
				q.e.out.Fail(ctx, slog.LevelWarn, "queue limits probes", "queue limits: return a probe's job", err)
			}
		}
	}
	q.claimed(out)
	return out
}

// queueLeft is what a round's limited queues have left to claim, for a
// claim that picks its jobs itself (a keyed claim): take reports whether
// one more job of queue fits and counts it. Nil admits every job.
type queueLeft map[string]int

func (l queueLeft) take(queue string) bool {
	if l == nil {
		return true
	}
	n, ok := l[store.QueueOf(queue)]
	if !ok {
		return true
	}
	if n <= 0 {
		return false
	}
	l[store.QueueOf(queue)] = n - 1
	return true
}

// left returns the round's starts left per limited queue (nil without
// queue limits); the claimed jobs are then counted with claimed.
func (q *queueLimits) left() queueLeft {
	if q == nil || len(q.round) == 0 {
		return nil
	}
	out := make(queueLeft, len(q.round))
	for name, g := range q.round {
		out[name] = g.granted - g.used
	}
	return out
}
