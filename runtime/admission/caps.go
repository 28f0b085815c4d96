package admission

import (
	"maps"
	"slices"
	"sync"

	"github.com/queuemax/queuemax/runtime/store"
)

// queueSlots enforces Config.Queues at claim time: each named queue may
// hold at most its MaxWorkers jobs (claimed and not yet acknowledged), and
// the default queue the rest of the engine's current limit. A claim asks
// the store for at most each queue's free slots (ClaimParams.Queues); a
// queue at its cap is left out, so a flood of one queue cannot take every
// worker. The zero of *queueSlots (nil: no Config.Queues) changes nothing.
//
// It hooks into the engine at four points: hold and unhold count a job in
// and out of its queue, claim passes limits() to the store, ahead turns
// prefetching off (a prefetched job would later start outside its queue's
// cap), and idle also wakes on Controller.Freed (a queue at its cap got a slot back
// while the producer waited for work).
type queueSlots struct {
	e     *Controller
	caps  map[string]int // named queues → MaxWorkers
	names []string       // the named queues, sorted, then store.DefaultQueue
	named int            // the sum of caps

	mu   sync.Mutex
	held map[string]int
	free chan struct{} // buffer 1: a capped queue fell below its cap
}

func newQueueSlots(e *Controller, caps map[string]int) *queueSlots {
	if len(caps) == 0 {
		return nil
	}
	q := &queueSlots{e: e, caps: caps, held: make(map[string]int), free: make(chan struct{}, 1)}
	q.names = slices.Sorted(maps.Keys(caps))
	for _, n := range caps {
		q.named += n
	}
	q.names = append(q.names, store.DefaultQueue)
	return q
}

// capOf returns queue's cap: its MaxWorkers, or for the default queue the
// engine's current limit minus the named queues' (at least 1).
func (q *queueSlots) capOf(queue string) int {
	if n, ok := q.caps[queue]; ok {
		return n
	}
	return max(int(q.e.limit.Load())-q.named, 1)
}

// add counts one job in (delta 1) or out (-1) of its queue.
func (q *queueSlots) add(queue string, delta int) {
	if q == nil {
		return
	}
	queue = store.QueueOf(queue)
	q.mu.Lock()
	atCap := q.held[queue] >= q.capOf(queue)
	q.held[queue] += delta
	q.mu.Unlock()
	if delta < 0 && atCap {
		select {
		case q.free <- struct{}{}:
		default:
		}
	}
}

// limits returns the queues a claim may take from, each with its free
// slots; queues at their cap are left out (an empty, non-nil list claims
// nothing). Nil means no caps.
func (q *queueSlots) limits() []store.QueueLimit {
	if q == nil {
		return nil
	}
	out := make([]store.QueueLimit, 0, len(q.names))
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, name := range q.names {
		if n := q.capOf(name) - q.held[name]; n > 0 {
			out = append(out, store.QueueLimit{Queue: name, Max: n})
		}
	}
	return out
}
