package engine

import (
	"context"
	"runtime"
	"sort"
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
	e     *Engine
	st    store.Limiter
	rules map[string]store.LimitRule // task → rule

	mu       sync.Mutex
	toGive   map[store.ScopeKey]int  // slots to give back
	held     map[store.ScopeKey]int  // slots held in the store: running, spare or being claimed
	spare    map[store.ScopeKey]int  // held slots no job uses (pooled rules)
	touched  map[store.ScopeKey]bool // spare slots used since the last renewal
	flushing bool
	free     chan struct{}            // buffer 1: a slot became spare or went back
	waits    map[string]*atomic.Int64 // claim rounds a task's limit left out
}

func newGlobalLimits(e *Engine) *globalLimits {
	st, ok := e.cfg.Store.(store.Limiter)
	if !ok || len(e.cfg.GlobalLimits) == 0 {
		return nil
	}
	g := &globalLimits{e: e, st: st, rules: e.cfg.GlobalLimits, toGive: make(map[store.ScopeKey]int),
		free: make(chan struct{}, 1), held: make(map[store.ScopeKey]int), spare: make(map[store.ScopeKey]int), touched: make(map[store.ScopeKey]bool), waits: make(map[string]*atomic.Int64)}
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
// a cap of running jobs without a rate. A job's end then puts its slot in
// the process's spare pool, which the next round claims with before it
// asks the store for more, so a busy process pays no store call per
// round; the spare slots go back when a claim finds fewer jobs than it
// could take, when they sat unused for a renewal period, and at the stop.
func pooled(r store.LimitRule) bool { return r.Rate <= 0 && r.Concurrency > 0 }

// take sets each global group's granted: spare slots first, then what the
// store grants, in one call for every group. It returns how soon a group
// granted less than it asked for may be granted more.
func (g *globalLimits) take(ctx context.Context, groups []claimGroup, now time.Time) ([]claimGroup, time.Duration) {
	retryIn := time.Hour
	var takes []store.LimitTake
	var idx []int
	g.mu.Lock()
	for i, gr := range groups {
		if !gr.global {
			continue
		}
		r, k := g.rules[gr.tasks[0]], store.ScopeKey{Scope: store.TaskScope(gr.tasks[0])}
		want := gr.max
		if pooled(r) {
			from := min(g.spare[k], want)
			g.spare[k] -= from
			if from > 0 {
				g.touched[k] = true
			}
			groups[i].granted = from
			want = min(want-from, r.Concurrency-g.held[k])
			if want <= 0 {
				if from < gr.max && g.held[k] < r.Concurrency {
					retryIn = min(retryIn, g.poll())
				}
				if from == 0 {
					g.waits[gr.tasks[0]].Add(1)
				}
				continue
			}
		}
		takes = append(takes, store.LimitTake{Scope: k.Scope, Key: k.Key, Rule: r, Want: want})
		idx = append(idx, i)
	}
	g.mu.Unlock()
	if len(takes) == 0 {
		return groups, retryIn
	}
	grants, err := g.st.LimitTake(ctx, g.e.cfg.WorkerID, takes, now, now.Add(g.expiry()))
	if err != nil {
		g.e.log.WarnContext(ctx, "global limits: take failed", "err", err)
		grants = make([]store.LimitGrant, len(takes)) // take none this round
		retryIn = g.poll()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, i := range idx {
		gr := grants[k]
		if takes[k].Rule.Concurrency > 0 {
			g.held[store.ScopeKey{Scope: takes[k].Scope, Key: takes[k].Key}] += gr.N
		}
		groups[i].granted += gr.N
		if gr.N < takes[k].Want {
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

// give appends what group gr of a round must give back after claiming n
// of the granted jobs (room was the most it asked the claim for): unused
// slots and tokens, and, under a rate, the used tokens restamped to now,
// when the jobs start (see store.LimitGive). Unused pooled slots stay
// spare while the claim found all it asked for.
func (g *globalLimits) give(gives []store.LimitGive, gr claimGroup, room, n int, at time.Time) []store.LimitGive {
	r := g.rules[gr.tasks[0]]
	k := store.ScopeKey{Scope: store.TaskScope(gr.tasks[0])}
	out := store.LimitGive{Scope: k.Scope, Key: k.Key, At: at}
	unused := gr.granted - n
	g.mu.Lock()
	switch {
	case pooled(r) && n < room:
		// The backlog is shallower than the room: no use for spare slots.
		out.Slots = unused + g.spare[k]
		g.spare[k] = 0
	case pooled(r):
		g.spare[k] += unused
	case r.Concurrency > 0:
		out.Slots = unused
	}
	g.held[k] -= out.Slots
	g.mu.Unlock()
	if r.Rate > 0 {
		out.Tokens = unused
		if n > 0 {
			out.Used, out.StartedAt = n, g.e.cfg.Now()
		}
	}
	if out.Slots > 0 || out.Tokens > 0 || out.Used > 0 {
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
		g.e.log.WarnContext(ctx, "global limits: give back unused starts", "err", err)
	}
}

// ended records that j no longer runs (its handler returned, or it was
// dropped before it ran); the caller still holds it (jobWG). A pooled slot becomes spare
// while the engine claims; any other goes back with the next flush, which
// ended starts unless one is running.
func (g *globalLimits) ended(j *store.Job) {
	if g == nil {
		return
	}
	r, ok := g.rules[j.Task]
	if !ok || r.Concurrency <= 0 {
		return
	}
	k := store.ScopeKey{Scope: store.TaskScope(j.Task)}
	g.mu.Lock()
	if pooled(r) && g.e.state.Load() == Running {
		g.spare[k]++
		g.touched[k] = true
		g.mu.Unlock()
		g.wake()
		return
	}
	g.toGive[k]++
	start := !g.flushing
	g.flushing = true
	g.mu.Unlock()
	if start {
		g.e.jobWG.Add(1)
		go g.flush()
	}
}

// flush gives back the ended jobs' slots until none is left.
func (g *globalLimits) flush() {
	defer g.e.jobWG.Done()
	runtime.Gosched() // let the rest of an acknowledgement batch gather
	for {
		g.mu.Lock()
		if len(g.toGive) == 0 {
			g.flushing = false
			g.mu.Unlock()
			return
		}
		gives := make([]store.LimitGive, 0, len(g.toGive))
		for k, n := range g.toGive {
			gives = append(gives, store.LimitGive{Scope: k.Scope, Key: k.Key, Slots: n})
			g.held[k] -= n
		}
		clear(g.toGive)
		g.mu.Unlock()
		g.settle(g.e.jobCtx, gives)
		g.wake() // another round may take them again
	}
}

// wake wakes the producer, claiming or idle, without blocking.
func (g *globalLimits) wake() {
	g.e.signalSlot()
	select {
	case g.free <- struct{}{}:
	default:
	}
}

// freed is signalled when a slot became spare or went back (nil without
// global limits).
func (g *globalLimits) freed() <-chan struct{} {
	if g == nil {
		return nil
	}
	return g.free
}

// idleSpare takes out the spare slots not used since the last call (all
// of them with all), to give back.
func (g *globalLimits) idleSpare(all bool) []store.LimitGive {
	g.mu.Lock()
	defer g.mu.Unlock()
	var gives []store.LimitGive
	for k, n := range g.spare {
		if n > 0 && (all || !g.touched[k]) {
			gives = append(gives, store.LimitGive{Scope: k.Scope, Key: k.Key, Slots: n})
			g.held[k] -= n
			delete(g.spare, k)
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
		g.e.log.WarnContext(ctx, "global limits: renew slots", "err", err)
	}
}

// Close gives back the spare slots once the engine stopped.
func (g *globalLimits) Close(ctx context.Context) { g.settle(ctx, g.idleSpare(true)) }

// GlobalLimitWaits returns, per task with a global limit, the claim
// rounds that left it out because its limit was reached.
func (e *Engine) GlobalLimitWaits() map[string]int64 {
	if e.glim == nil {
		return nil
	}
	out := make(map[string]int64, len(e.glim.waits))
	for name, n := range e.glim.waits {
		out[name] = n.Load()
	}
	return out
}
