package admission

import (
	"context"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Global limits (store.Limiter): a claim round takes starts for every
// globally limited task in one store call, claims each such task in its
// own group of at most what it was granted, and gives back in one call
// what the claims did not use. A job's concurrency slot is given back
// when the engine lets go of the job (unhold), batched: the slots of one
// acknowledgement batch go back in one call. The slots this process holds
// are renewed beside the heartbeats; a process killed with kill -9 stops
// renewing them and they expire after StuckTimeout, when orphan recovery
// also takes its jobs back.

// globalLimits is the engine's side of the store's limits.
type globalLimits struct {
	e     *Controller
	st    store.Limiter
	rules map[string]store.LimitRule // task → rule

	mu      sync.Mutex
	toGive  map[store.ScopeKey]int  // slots to give back
	held    map[store.ScopeKey]int  // slots held in the store
	running map[store.ScopeKey]int  // pooled: jobs running on a held slot
	queued  map[store.ScopeKey]int  // pooled: jobs claimed that have not started
	slot    *sync.Cond              // on mu: a pooled slot came free for a starting job
	touched map[store.ScopeKey]bool // pooled slots used since the last renewal
	// notBefore is, per rate-limited key, when the store said its next
	// token comes back: rounds before it do not ask again.
	notBefore map[store.ScopeKey]time.Time
	flush     flusher
	free      chan struct{}            // buffer 1: a slot became spare or went back
	waits     map[string]*atomic.Int64 // claim rounds a task's limit left out
	keys      *keyedLimits             // per-key limits (keyed.go); nil: none
}

func newGlobalLimits(e *Controller) *globalLimits {
	st := e.cfg.Store
	if len(e.cfg.GlobalLimits) == 0 {
		return nil
	}
	g := &globalLimits{e: e, st: st, rules: e.cfg.GlobalLimits, toGive: make(map[store.ScopeKey]int),
		free: make(chan struct{}, 1), held: make(map[store.ScopeKey]int), running: make(map[store.ScopeKey]int), queued: make(map[store.ScopeKey]int), touched: make(map[store.ScopeKey]bool), waits: make(map[string]*atomic.Int64)}
	g.slot = sync.NewCond(&g.mu)
	g.flush = flusher{mu: &g.mu, jobs: e.jobWG, take: g.takeGives, give: func(gives []store.LimitGive) {
		g.settle(e.jobCtx(), gives)
		g.wake() // another round may take them again
	}}
	g.notBefore = make(map[store.ScopeKey]time.Time)
	g.keys = newKeyedLimits(e)
	for name := range g.rules {
		g.waits[name] = new(atomic.Int64)
	}
	return g
}

// limited reports whether task has a global limit.
func (g *globalLimits) limited(task string) bool {
	if g == nil {
		return false
	}
	_, ok := g.rules[task]
	return ok
}

// expiry is how long a slot lives without a renewal.
func (g *globalLimits) expiry() time.Duration {
	if d := g.e.cfg.StuckTimeout; d > 0 {
		return d
	}
	return 5 * time.Minute
}

// pooled reports whether r's slots are kept by the process between jobs:
// a cap of running jobs without a rate. A pooled slot is held from the
// store by the process and used by one running job at a time: a job takes
// one when it starts (a worker waits for one if every held slot runs a
// job) and frees it when its handler returns, so the next job of the
// process reuses it without a store call, and the process may claim ahead
// (prefetch) up to as many jobs again as it holds slots. Held slots go back
// when a claim finds fewer jobs than it could take, when they sat unused
// for a renewal period, and at the stop.
func pooled(r store.LimitRule) bool { return r.Rate <= 0 && r.Concurrency > 0 }

// room is how many more jobs key k's pool may claim: as many as the
// producer wants while the process holds a slot per worker (no worker
// ever waits for one), otherwise up to four times its held slots in all,
// claimed or running. g.mu is held.
func (g *globalLimits) room(k store.ScopeKey) int {
	if g.held[k] >= int(g.e.limit.Load()) {
		return math.MaxInt32 // every worker can run on a held slot: the usual prefetch
	}
	return max(0, 4*g.held[k]-g.queued[k]-g.running[k])
}

// take sets each global group's granted: for a pooled rule the room its
// held slots leave, after asking the store for more slots when they leave
// too little; for any other, what the store grants, in one call for every
// group. It returns how soon a group granted less than it asked for may be
// granted more.
func (g *globalLimits) take(ctx context.Context, groups []claimGroup, now time.Time) ([]claimGroup, time.Duration) {
	retryIn := time.Hour
	var takes []store.LimitTake
	var idx []int
	g.mu.Lock()
	for i, gr := range groups {
		if !gr.global {
			continue
		}
		if g.keyBy(gr.tasks[0]) != "" {
			groups[i].granted = g.keyedWant(gr) // taken per key at the claim (claimKeyed)
			continue
		}
		r, k := g.rules[gr.tasks[0]], store.ScopeKey{Scope: store.TaskScope(gr.tasks[0])}
		want := gr.max
		if r.Rate > 0 {
			// Tokens only for the workers free now: a token taken is out
			// of the bucket while its job waits, so it must not wait.
			want = min(want, max(int(g.e.limit.Load()-g.e.executing.Load()), 1))
		}
		if pooled(r) {
			if g.room(k) >= want || g.held[k] >= r.Concurrency {
				groups[i].granted = min(want, g.room(k))
				g.queued[k] += groups[i].granted
				if groups[i].granted < want && g.held[k] < r.Concurrency {
					retryIn = min(retryIn, g.poll())
				}
				if groups[i].granted == 0 {
					g.waits[gr.tasks[0]].Add(1)
				}
				continue
			}
			want = min(want-g.room(k), r.Concurrency-g.held[k])
		}
		if nb := g.notBefore[k]; now.Before(nb) {
			g.waits[gr.tasks[0]].Add(1)
			retryIn = min(retryIn, max(nb.Sub(now), time.Millisecond))
			continue
		}
		takes = append(takes, store.LimitTake{Scope: k.Scope, Key: k.Key, Rule: r, Want: want})
		idx = append(idx, i)
	}
	g.mu.Unlock()
	riders := g.e.qlim.riders() // the queue limits' takes join this call (queue.go)
	if len(takes)+len(riders) == 0 {
		return groups, retryIn
	}
	grants, err := g.st.LimitTake(ctx, g.e.cfg.WorkerID, append(takes, riders...), now, now.Add(g.expiry()))
	g.e.qlim.rode(ctx, grants[min(len(takes), len(grants)):], err, now)
	if err != nil {
		g.e.out.Fail(ctx, slog.LevelWarn, "global limits", "global limits: take failed", err)
		grants = make([]store.LimitGrant, len(takes)) // take none this round
		retryIn = g.poll()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for n, i := range idx {
		gr := grants[n]
		k := store.ScopeKey{Scope: takes[n].Scope, Key: takes[n].Key}
		if takes[n].Rule.Concurrency > 0 {
			g.held[k] += gr.N
		}
		groups[i].takenAt = gr.At
		short := gr.N < takes[n].Want
		if short && !gr.RetryAt.IsZero() {
			g.notBefore[k] = gr.RetryAt
		}
		if pooled(takes[n].Rule) {
			groups[i].granted = min(groups[i].max, g.room(k))
			g.queued[k] += groups[i].granted
			short = groups[i].granted < groups[i].max && short
		} else {
			groups[i].granted = gr.N
		}
		if short {
			if groups[i].granted == 0 {
				g.waits[groups[i].tasks[0]].Add(1)
			}
			if gr.RetryAt.IsZero() {
				retryIn = min(retryIn, g.poll())
			} else {
				retryIn = min(retryIn, max(gr.RetryAt.Sub(now), time.Millisecond))
			}
		}
	}
	return groups, retryIn
}

// poll is how soon a round retries a limit whose slots other processes
// hold (this one does not hear when they give them back).
func (g *globalLimits) poll() time.Duration {
	return max(g.e.cfg.PollInterval, 20*time.Millisecond)
}

// give appends what group gr of a round must give back after claiming
// jobs of the granted ones (room was the most it asked the claim for):
// unused slots and tokens; under a rate, the used tokens move to their
// handlers' starts later (stamps.go). A pooled rule keeps its held
// slots while the claim found all it asked for, and gives back those its
// claimed and running jobs do not need otherwise.
func (g *globalLimits) give(gives []store.LimitGive, gr claimGroup, room int, jobs []*store.Job) []store.LimitGive {
	n := len(jobs)
	r := g.rules[gr.tasks[0]]
	k := store.ScopeKey{Scope: store.TaskScope(gr.tasks[0])}
	out := store.LimitGive{Scope: k.Scope, Key: k.Key, At: gr.takenAt}
	unused := gr.granted - n
	g.mu.Lock()
	switch {
	case pooled(r):
		g.queued[k] -= unused
		if n == 0 && room > 0 {
			// No job to claim: no use for the spare slots.
			out.Slots = max(0, g.held[k]-g.running[k]-g.queued[k])
		}
	case r.Concurrency > 0:
		out.Slots = unused
	}
	g.held[k] -= out.Slots
	g.mu.Unlock()
	if r.Rate > 0 {
		out.Tokens = unused
		for _, j := range jobs {
			g.e.stamp.add(j.ID, k.Scope, k.Key, gr.takenAt) // moved to the handler's start (stamps.go)
		}
	}
	if out.Slots > 0 || out.Tokens > 0 {
		gives = append(gives, out)
	}
	return gives
}

// settle gives back, in one call, what a round's global groups did not
// use.
func (g *globalLimits) settle(ctx context.Context, gives []store.LimitGive) {
	if len(gives) == 0 {
		return
	}
	if err := g.st.LimitGive(context.WithoutCancel(ctx), g.e.cfg.WorkerID, gives, g.e.cfg.Now()); err != nil {
		// The slots expire with this process's lease instead.
		g.e.out.Fail(ctx, slog.LevelWarn, "global limits give", "global limits: give back unused starts", err)
	}
}

// start waits, for a job of a pooled rule, until one of the slots the
// process holds is free and takes it. A job of any other rule holds its
// slot since its claim.
func (g *globalLimits) start(j *store.Job) {
	if g == nil {
		return
	}
	r, ok := g.rules[j.Task]
	if !ok || !pooled(r) || g.keyBy(j.Task) != "" {
		return
	}
	k := store.ScopeKey{Scope: store.TaskScope(j.Task)}
	g.mu.Lock()
	for g.running[k] >= g.held[k] {
		g.slot.Wait()
	}
	g.queued[k]--
	g.running[k]++
	g.touched[k] = true
	g.mu.Unlock()
}

// ended records that j's handler returned, or, with !started, that j was
// dropped before it started; the caller still holds j (jobWG). A pooled
// slot stays held for the next job; any other goes back with the next
// flush, which ended starts unless one is running.
func (g *globalLimits) ended(j *store.Job, started bool) {
	if g == nil {
		return
	}
	r, ok := g.rules[j.Task]
	if !ok {
		return
	}
	if g.wideEnded(j) { // a keyed job's slot of the task's limit over all keys (wide.go)
		g.mu.Lock()
		g.toGive[store.ScopeKey{Scope: store.TaskScope(j.Task)}]++
		if r.Concurrency <= 0 {
			g.flush.kick()
			return
		}
		g.mu.Unlock()
	}
	if r.Concurrency <= 0 {
		return
	}
	k := g.jobKey(j)
	g.mu.Lock()
	if pooled(r) && k.Key == "" {
		if started {
			g.running[k]--
			g.slot.Broadcast()
		} else {
			g.queued[k]--
		}
		g.mu.Unlock()
		g.wake()
		return
	}
	g.toGive[k]++
	g.flush.kick()
}

// takeGives empties toGive, the ended jobs' slots, into the store's
// gives (flusher.take).
func (g *globalLimits) takeGives() []store.LimitGive {
	if len(g.toGive) == 0 {
		return nil
	}
	gives := make([]store.LimitGive, 0, len(g.toGive))
	for k, n := range g.toGive {
		gives = append(gives, store.LimitGive{Scope: k.Scope, Key: k.Key, Slots: n})
		g.held[k] -= n
	}
	clear(g.toGive)
	return gives
}

// wake wakes the producer, claiming or idle, without blocking.
func (g *globalLimits) wake() {
	g.e.signalSlot()
	select {
	case g.free <- struct{}{}:
	default:
	}
}

// idleSpare takes out the pooled slots no claimed or running job needs
// and that were not used since the last call (all of them with all), to
// give back.
func (g *globalLimits) idleSpare(all bool) []store.LimitGive {
	g.mu.Lock()
	defer g.mu.Unlock()
	var gives []store.LimitGive
	for k, n := range g.held {
		task := strings.TrimPrefix(k.Scope, "task:")
		if k.Key != "" || !pooled(g.rules[task]) || g.keyBy(task) != "" { // a keyed task's slots are never pooled
			continue
		}
		if spare := n - g.running[k] - g.queued[k]; spare > 0 && (all || !g.touched[k]) {
			gives = append(gives, store.LimitGive{Scope: k.Scope, Key: k.Key, Slots: spare})
			g.held[k] -= spare
		}
	}
	clear(g.touched)
	return gives
}

// Name, Interval and RunOnce make globalLimits the service that renews
// the slots this process holds.
func (g *globalLimits) Name() string { return "global-limits" }
func (g *globalLimits) Interval() time.Duration {
	if d := g.e.cfg.HeartbeatInterval; d > 0 {
		return min(d, g.expiry()/3)
	}
	return g.expiry() / 3
}
func (g *globalLimits) RunOnce(ctx context.Context, _ time.Time) {
	g.settle(ctx, g.idleSpare(false))
	g.sweepKeys(ctx)
	g.mu.Lock()
	keys := make([]store.ScopeKey, 0, len(g.held))
	for k, n := range g.held {
		if n > 0 {
			keys = append(keys, k)
		} else {
			delete(g.held, k)
		}
	}
	g.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a].Scope < keys[b].Scope })
	now := g.e.cfg.Now()
	if err := g.st.LimitRefresh(ctx, g.e.cfg.WorkerID, keys, now, now.Add(g.expiry())); err != nil {
		g.e.out.Fail(ctx, slog.LevelWarn, "global limits renew", "global limits: renew slots", err)
	}
}

// Close gives back the spare slots once the engine stopped.
func (g *globalLimits) Close(ctx context.Context) { g.settle(ctx, g.idleSpare(true)) }

// GlobalLimitWaits returns, per task with a global limit, the claim
// rounds that left it out because its limit was reached.
func (c *Controller) GlobalLimitWaits() map[string]int64 {
	if c.glim == nil {
		return nil
	}
	out := make(map[string]int64, len(c.glim.waits))
	for name, n := range c.glim.waits {
		out[name] = n.Load()
	}
	return out
}
