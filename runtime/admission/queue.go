package admission

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Queue limits (store.Limiter.SetQueueLimits): a rate and a concurrency
// cap on a named queue, over every process, stored and changed while
// processes run. The engine caches which queues have a rule, re-read at
// most every QueueRulesRefresh (and at once after QueueLimitsChanged), so
// no claim round pays a read for them. A round takes starts for every
// limited queue in one store call (the store applies the rule it holds
// now, so a changed rule binds from the next round on), claims each
// limited queue capped by what it was granted (ClaimParams.Queues) and
// the other queues without them (ClaimParams.SkipQueues), and gives back
// what it did not claim in one more call. A job holds a slot from claim to
// end; slots go back batched and are renewed like the task limits' (those
// of a process killed with kill -9 expire after StuckTimeout). A process
// that holds a slot of a cap for each of its workers claims that queue's
// jobs ahead without more slots (saturated): no more of them can run at
// once than it holds.

// QueueRulesRefresh is the least time between two reads of the queue
// rules (at least PollInterval).
const QueueRulesRefresh = 50 * time.Millisecond

// queueLimits is the engine's side of the queue limits; nil when the store
// holds no limits.
type queueLimits struct {
	e  *Controller
	st store.Limiter

	// The cached rules and when they were read (producer goroutine only);
	// stale forces a read at the next round.
	rules  map[string]store.LimitRule
	names  []string
	readAt time.Time
	stale  atomic.Bool
	any    atomic.Bool // some queue has a rule
	// notBefore is, per rate-limited queue, when its next token comes
	// back; round is this round's grants (producer goroutine only).
	notBefore map[string]time.Time
	round     map[string]*queueGrant
	// takes are the round's planned takes; landed is set once they were
	// made (in the task limits' store call or in their own), retryIn
	// what their grants said.
	takes   []store.LimitTake
	landed  bool
	retryIn time.Duration

	mu    sync.Mutex
	held  map[store.JobID]heldSlot // claimed jobs holding a slot
	inUse map[string]int           // held jobs per queue, and a round's grants until settle
	// A queue with a concurrency cap and no rate is pooled: its slots
	// stay held by the process between jobs (a job's end gives none
	// back), so a busy process pays no store call per round; spare slots
	// go back when a claim finds fewer jobs than it could take, when they
	// sat unused for a renewal period, at the stop, and when the queue's
	// rule changes (poolGen moves: the jobs claimed before give theirs
	// back at their end).
	pooled  map[string]bool
	poolGen map[string]int
	touched map[string]bool
	nheld   atomic.Int64   // len(held): ended costs no lock without any
	count   map[string]int // slots held per queue
	toGive  map[string]int
	flush   flusher
	free    chan struct{} // buffer 1: a slot went back
	// maxWorkers is the most handlers the engine ever runs at once
	// (Workers, or the autoscaler's maximum). A pooled queue of which the
	// process holds that many slots is saturated: however many of its
	// jobs the process claims, no more of them run at once than it holds
	// slots, so its claims may prefetch (see saturated).
	maxWorkers int
	// requeue asks the producer to return its queued jobs to pending: a
	// saturated queue's rule changed while it had more jobs claimed than
	// slots (they would run under the old rule's slots).
	requeue bool
	// oldGen counts, per queue, the held jobs claimed under a rule that
	// has changed since: a queue is not saturated while any is left (the
	// slots they keep are the old rule's).
	oldGen map[string]int
}

// queueGrant is one limited queue's starts in a round; pooled ones start
// with base spare slots the process held.
type queueGrant struct {
	granted, used, base int
	pooled              bool
	at                  time.Time
}

// heldSlot is the slot a claimed job holds.
type heldSlot struct {
	queue  string
	gen    int
	pooled bool
}

func pooledRule(r store.LimitRule) bool { return r.Concurrency > 0 && r.Rate <= 0 }

func newQueueLimits(e *Controller) *queueLimits {
	st := e.cfg.Store
	q := &queueLimits{e: e, st: st, notBefore: make(map[string]time.Time), round: make(map[string]*queueGrant),
		held: make(map[store.JobID]heldSlot), inUse: make(map[string]int), pooled: make(map[string]bool),
		poolGen: make(map[string]int), oldGen: make(map[string]int), touched: make(map[string]bool), count: make(map[string]int), toGive: make(map[string]int), free: make(chan struct{}, 1)}
	q.maxWorkers = e.cfg.Workers
	if p := e.cfg.Autoscale; p != nil {
		q.maxWorkers = max(q.maxWorkers, p.Max)
	}
	q.flush = flusher{mu: &q.mu, jobs: e.jobWG, take: q.takeGives, give: func(gives []store.LimitGive) {
		q.give(e.jobCtx(), gives)
		q.wake()
	}}
	q.stale.Store(true)
	return q
}

// saturated reports whether the process holds a slot of pooled queue name
// for every handler it may run, none of them kept for a job claimed under
// an older rule (q.mu is held).
func (q *queueLimits) saturated(name string) bool {
	return q.pooled[name] && q.oldGen[name] == 0 && q.maxWorkers > 0 && q.count[name]-q.toGive[name] >= q.maxWorkers
}

// prefetchOK reports whether claims may prefetch beyond the free workers:
// no queue has limits, or every limited queue is saturated (producer
// goroutine).
func (q *queueLimits) prefetchOK() bool {
	if !q.active() {
		return true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, name := range q.names {
		if !q.saturated(name) {
			return false
		}
	}
	return true
}

// requeueAsked reports, once, whether a rule change asked the producer to
// return its queued jobs to pending.
func (q *queueLimits) requeueAsked() bool {
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.requeue
	q.requeue = false
	return r
}

// active reports whether some queue has limits (claims then prefetch
// only while every limited queue is saturated: see prefetchOK).
func (q *queueLimits) active() bool { return q != nil && q.any.Load() }

// changed makes the next round read the rules again.
func (q *queueLimits) changed() {
	if q != nil {
		q.stale.Store(true)
	}
}

// QueueLimitsChanged makes the next claim round read the queue limits
// again (a Client that changed them) and wakes the producer.
func (c *Controller) QueueLimitsChanged() {
	c.qlim.changed()
	c.qlim.wake()
}

// refresh re-reads the rules when they are stale or older than the
// refresh interval.
func (q *queueLimits) refresh(ctx context.Context, now time.Time) {
	every := max(q.e.cfg.PollInterval, QueueRulesRefresh)
	if !q.stale.Load() && now.Sub(q.readAt) < every && now.After(q.readAt) {
		return
	}
	q.stale.Store(false)
	rules, err := q.st.QueueLimits(ctx)
	if err != nil {
		q.e.log.DebugContext(ctx, "queue limits: read rules", "err", err)
		return // keep the last rules; read again after the interval
	}
	q.readAt = now
	for name := range rules {
		if q.e.queues != nil && name != store.DefaultQueue {
			if _, ok := q.e.queues.caps[name]; !ok {
				delete(rules, name) // a queue this engine does not claim
			}
		}
	}
	var gives []store.LimitGive
	q.mu.Lock()
	for name := range q.pooled {
		if r, ok := rules[name]; !ok || r != q.rules[name] {
			gives = q.unpool(gives, name)
		}
	}
	for name, r := range rules {
		if pooledRule(r) {
			q.pooled[name] = true
		}
	}
	q.mu.Unlock()
	q.rules = rules
	q.names = slices.Sorted(maps.Keys(rules))
	q.any.Store(len(rules) > 0)
	q.give(ctx, gives)
}

// unpool ends queue name's pool (its rule changed): its spare slots go
// back now, its running jobs' at their end. q.mu is held.
func (q *queueLimits) unpool(gives []store.LimitGive, name string) []store.LimitGive {
	if q.inUse[name] > q.count[name]-q.toGive[name] {
		q.requeue = true // prefetched jobs beyond the slots: back to pending
	}
	for _, h := range q.held {
		if h.queue == name && h.pooled && h.gen == q.poolGen[name] {
			q.oldGen[name]++
		}
	}
	delete(q.pooled, name)
	q.poolGen[name]++
	return q.spare(gives, name)
}

// spare appends the give of queue name's slots no job holds. q.mu is held.
func (q *queueLimits) spare(gives []store.LimitGive, name string) []store.LimitGive {
	if n := q.count[name] - q.inUse[name] - q.toGive[name]; n > 0 {
		q.count[name] -= n
		gives = append(gives, store.LimitGive{Scope: store.QueueScope(name), Slots: n})
	}
	return gives
}

// plan prepares, for a round of up to n jobs, the takes of every limited
// queue's starts (see take); it returns how soon a queue left out for its
// rate may be granted more.
func (q *queueLimits) plan(ctx context.Context, n int, now time.Time) time.Duration {
	retryIn := time.Hour
	if q == nil {
		return retryIn
	}
	clear(q.round)
	q.takes, q.landed = q.takes[:0], false
	q.refresh(ctx, now)
	e := q.e
	for _, name := range q.names {
		want := n
		if q.rules[name].Rate > 0 {
			// Tokens only for the workers free now (see globalLimits.take).
			want = min(want, max(int(e.limit.Load()-e.executing.Load()), 1))
		}
		if nb := q.notBefore[name]; now.Before(nb) {
			q.round[name] = &queueGrant{}
			retryIn = min(retryIn, max(nb.Sub(now), time.Millisecond))
			continue
		}
		if pooledRule(q.rules[name]) {
			q.mu.Lock()
			spare := max(q.count[name]-q.inUse[name]-q.toGive[name], 0)
			if spare >= want || q.saturated(name) {
				q.inUse[name] += want // reserved until settle
				q.mu.Unlock()
				q.round[name] = &queueGrant{granted: want, base: want, pooled: true}
				continue
			}
			q.inUse[name] += spare
			q.mu.Unlock()
			q.round[name] = &queueGrant{base: spare, pooled: true}
			want -= spare
		}
		q.takes = append(q.takes, store.LimitTake{Scope: store.QueueScope(name), Want: want})
	}
	return retryIn
}

// riders returns the planned takes, for the task limits' take to make in
// its own store call (one transaction for every scope of the round).
func (q *queueLimits) riders() []store.LimitTake {
	if q == nil || q.landed {
		return nil
	}
	q.landed = true
	return q.takes
}

// take makes the planned takes in their own store call unless they rode
// along with the task limits' (riders, then grant). It returns how soon a
// queue granted less than it asked for may be granted more.
func (q *queueLimits) take(ctx context.Context, now time.Time) time.Duration {
	if q == nil || len(q.takes) == 0 {
		return time.Hour
	}
	if q.landed {
		return q.retryIn
	}
	q.landed = true
	grants, err := q.st.LimitTake(ctx, q.e.cfg.WorkerID, q.takes, now, now.Add(q.expiry()))
	return q.grant(ctx, grants, err, now)
}

// grant records the grants of the planned takes (err: the take failed,
// none is granted this round).
func (q *queueLimits) grant(ctx context.Context, grants []store.LimitGrant, err error, now time.Time) time.Duration {
	retryIn := time.Hour
	if err != nil {
		q.e.out.Fail(ctx, slog.LevelWarn, "queue limits", "queue limits: take failed", err)
		grants = make([]store.LimitGrant, len(q.takes)) // claim none of them this round
		retryIn = q.poll()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, t := range q.takes {
		g, name := grants[i], t.Scope[len("queue:"):]
		rg := q.round[name]
		if rg == nil {
			rg = &queueGrant{}
			q.round[name] = rg
		}
		rg.granted, rg.at = rg.base+g.N, g.At
		q.count[name] += g.N
		q.inUse[name] += g.N // reserved until settle
		if g.N < t.Want {
			if g.RetryAt.IsZero() {
				retryIn = min(retryIn, q.poll()) // slots other processes hold
			} else {
				q.notBefore[name] = g.RetryAt
				retryIn = min(retryIn, max(g.RetryAt.Sub(now), time.Millisecond))
			}
		}
	}
	q.retryIn = retryIn
	return retryIn
}

// rode records the grants of takes that rode along with the task limits'
// store call.
func (q *queueLimits) rode(ctx context.Context, grants []store.LimitGrant, err error, now time.Time) {
	if q != nil && len(q.takes) > 0 {
		q.grant(ctx, grants, err, now)
	}
}

// claim runs one claim of the round under its queue grants: with
// Config.Queues, a limited queue's cap is at most its starts left;
// without, the limited queues that have starts left are claimed first,
// capped, and the other queues then skip them.
func (q *queueLimits) claim(ctx context.Context, st store.Store, p store.ClaimParams) ([]*store.Job, error) {
	if q == nil || len(q.round) == 0 {
		return st.Claim(ctx, p)
	}
	left := func(name string) int { g := q.round[name]; return g.granted - g.used }
	if p.Queues != nil {
		qs := make([]store.QueueLimit, 0, len(p.Queues))
		for _, ql := range p.Queues {
			if _, ok := q.round[store.QueueOf(ql.Queue)]; ok {
				ql.Max = min(ql.Max, left(store.QueueOf(ql.Queue)))
			}
			if ql.Max > 0 {
				qs = append(qs, ql)
			}
		}
		p.Queues = qs
		jobs, err := st.Claim(ctx, p)
		q.claimed(jobs)
		return jobs, err
	}
	var capped []store.QueueLimit
	skip := make([]string, 0, len(q.round))
	for _, name := range q.names {
		if _, ok := q.round[name]; ok {
			skip = append(skip, name)
			if n := left(name); n > 0 {
				capped = append(capped, store.QueueLimit{Queue: name, Max: n})
			}
		}
	}
	var out []*store.Job
	var firstErr error
	if len(capped) > 0 {
		cp := p
		cp.Queues = capped
		jobs, err := st.Claim(ctx, cp)
		q.claimed(jobs)
		out, firstErr = jobs, err
	}
	if rest := p.Max - len(out); rest > 0 {
		p.Max, p.SkipQueues = rest, skip
		jobs, err := st.Claim(ctx, p)
		out = append(out, jobs...)
		if firstErr == nil {
			firstErr = err
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	return out, firstErr
}

// claimed counts a claim's jobs of limited queues against their grants;
// each holds its slot until it ends.
func (q *queueLimits) claimed(jobs []*store.Job) {
	if q == nil || len(q.round) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, j := range jobs {
		name := store.QueueOf(j.Queue)
		if g := q.round[name]; g != nil {
			g.used++
			q.held[j.ID] = heldSlot{queue: name, gen: q.poolGen[name], pooled: g.pooled}
			if !g.pooled {
				q.e.stamp.add(j.ID, store.QueueScope(name), "", g.at) // moved to the handler's start (stamps.go)
			}
			q.touched[name] = true
			q.nheld.Add(1)
		}
	}
}

// settle appends to gives what the round must give back: the starts it
// did not claim (the used tokens move to their handlers' starts,
// stamps.go).
func (q *queueLimits) settle(gives []store.LimitGive) []store.LimitGive {
	if q == nil || len(q.round) == 0 {
		return gives
	}
	q.mu.Lock()
	for _, name := range q.names {
		g := q.round[name]
		if g == nil || g.granted == 0 {
			continue
		}
		unused := g.granted - g.used
		q.inUse[name] -= unused // the reservation the jobs did not use
		if g.pooled {
			if unused > 0 {
				gives = q.spare(gives, name) // no more jobs: no use for spare slots
			}
			continue
		}
		q.count[name] -= unused
		if unused > 0 {
			gives = append(gives, store.LimitGive{Scope: store.QueueScope(name), Slots: unused, Tokens: unused, At: g.at})
		}
	}
	q.mu.Unlock()
	clear(q.round)
	return gives
}

// give gives back gives in one call.
func (q *queueLimits) give(ctx context.Context, gives []store.LimitGive) {
	if q == nil || len(gives) == 0 {
		return
	}
	if err := q.st.LimitGive(context.WithoutCancel(ctx), q.e.cfg.WorkerID, gives, q.e.cfg.Now()); err != nil {
		// The slots expire with this process's lease instead.
		q.e.out.Fail(ctx, slog.LevelWarn, "queue limits give", "queue limits: give back", err)
	}
}

// ended records that j no longer runs (its handler returned, or it was
// dropped before it started): its slot goes back with the next flush. The
// caller still holds j (jobWG).
func (q *queueLimits) ended(j *store.Job) {
	if q == nil || q.nheld.Load() == 0 {
		return
	}
	q.mu.Lock()
	h, ok := q.held[j.ID]
	if !ok {
		q.mu.Unlock()
		return
	}
	delete(q.held, j.ID)
	q.nheld.Add(-1)
	q.inUse[h.queue]--
	if h.pooled && h.gen == q.poolGen[h.queue] {
		q.mu.Unlock() // the slot stays held for the next job
		q.wake()
		return
	}
	if h.pooled {
		q.oldGen[h.queue]--
	}
	if q.count[h.queue]-q.toGive[h.queue] <= min(q.inUse[h.queue], q.maxWorkers) {
		// The jobs still held (a saturated queue's prefetch) may run
		// that many at once: the slot stays until fewer are left.
		q.mu.Unlock()
		return
	}
	q.toGive[h.queue]++
	q.flush.kick()
}

// takeGives empties toGive, the ended jobs' queue slots, into the
// store's gives (flusher.take).
func (q *queueLimits) takeGives() []store.LimitGive {
	if len(q.toGive) == 0 {
		return nil
	}
	gives := make([]store.LimitGive, 0, len(q.toGive))
	for name, n := range q.toGive {
		gives = append(gives, store.LimitGive{Scope: store.QueueScope(name), Slots: n})
		q.count[name] -= n
	}
	clear(q.toGive)
	return gives
}

// wake wakes the producer, claiming or idle, without blocking.
func (q *queueLimits) wake() {
	if q == nil {
		return
	}
	q.e.signalSlot()
	select {
	case q.free <- struct{}{}:
	default:
	}
}

func (q *queueLimits) expiry() time.Duration {
	if d := q.e.cfg.StuckTimeout; d > 0 {
		return d
	}
	return 5 * time.Minute
}

func (q *queueLimits) poll() time.Duration { return max(q.e.cfg.PollInterval, 20*time.Millisecond) }

// Name, Interval and RunOnce make queueLimits the service that renews the
// slots this process holds.
func (q *queueLimits) Name() string { return "queue-limits" }
func (q *queueLimits) Interval() time.Duration {
	if d := q.e.cfg.HeartbeatInterval; d > 0 {
		return min(d, q.expiry()/3)
	}
	return q.expiry() / 3
}
func (q *queueLimits) RunOnce(ctx context.Context, _ time.Time) {
	q.give(ctx, q.idleSpare(false))
	q.mu.Lock()
	var keys []store.ScopeKey
	for _, name := range slices.Sorted(maps.Keys(q.count)) {
		if q.count[name] > 0 {
			keys = append(keys, store.ScopeKey{Scope: store.QueueScope(name)})
		} else {
			delete(q.count, name)
		}
	}
	q.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	now := q.e.cfg.Now()
	if err := q.st.LimitRefresh(ctx, q.e.cfg.WorkerID, keys, now, now.Add(q.expiry())); err != nil {
		q.e.out.Fail(ctx, slog.LevelWarn, "queue limits renew", "queue limits: renew slots", err)
	}
}
