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
	toGive   map[store.ScopeKey]int // slots to give back
	held     map[store.ScopeKey]int // slots held now
	flushing bool
	waits    map[string]*atomic.Int64 // claim rounds a task's limit left out
}

func newGlobalLimits(e *Engine) *globalLimits {
	st, ok := e.cfg.Store.(store.Limiter)
	if !ok || len(e.cfg.GlobalLimits) == 0 {
		return nil
	}
	g := &globalLimits{e: e, st: st, rules: e.cfg.GlobalLimits, toGive: make(map[store.ScopeKey]int),
		held: make(map[store.ScopeKey]int), waits: make(map[string]*atomic.Int64)}
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

// take asks the store for the starts of every global group in groups and
// sets each one's granted. It returns how soon a group granted less than
// it asked for may be granted more.
func (g *globalLimits) take(ctx context.Context, groups []claimGroup, now time.Time) ([]claimGroup, time.Duration) {
	retryIn := time.Hour
	var takes []store.LimitTake
	var idx []int
	for i, gr := range groups {
		if gr.global {
			takes = append(takes, store.LimitTake{Scope: store.TaskScope(gr.tasks[0]), Rule: g.rules[gr.tasks[0]], Want: gr.max})
			idx = append(idx, i)
		}
	}
	if len(takes) == 0 {
		return groups, retryIn
	}
	grants, err := g.st.LimitTake(ctx, g.e.cfg.WorkerID, takes, now, now.Add(g.expiry()))
	if err != nil {
		g.e.log.WarnContext(ctx, "global limits: take failed", "err", err)
		grants = make([]store.LimitGrant, len(takes)) // claim none of them this round
		retryIn = g.poll()
	}
	for k, i := range idx {
		gr := grants[k]
		if gr.N < groups[i].max {
			if gr.N == 0 {
				g.waits[groups[i].tasks[0]].Add(1)
			}
			if gr.RetryAt.IsZero() {
				retryIn = min(retryIn, g.poll())
			} else {
				retryIn = min(retryIn, max(gr.RetryAt.Sub(now), time.Millisecond))
			}
		}
		groups[i].granted = gr.N
	}
	return groups, retryIn
}

// poll is how soon a round retries a limit whose slots are all taken (by
// other processes too, whose releases this one does not hear of).
func (g *globalLimits) poll() time.Duration {
	return max(g.e.cfg.PollInterval, 20*time.Millisecond)
}

// settle gives back, in one call, what a round's global groups were
// granted and did not claim, and counts the slots of the claimed jobs.
func (g *globalLimits) settle(ctx context.Context, unused []store.LimitGive, claimed []*store.Job) {
	g.mu.Lock()
	for _, j := range claimed {
		if r, ok := g.rules[j.Task]; ok && r.Concurrency > 0 {
			g.held[store.ScopeKey{Scope: store.TaskScope(j.Task)}]++
		}
	}
	g.mu.Unlock()
	if len(unused) == 0 {
		return
	}
	if err := g.st.LimitGive(context.WithoutCancel(ctx), g.e.cfg.WorkerID, unused, g.e.cfg.Now()); err != nil {
		g.e.log.WarnContext(ctx, "global limits: give back unused starts", "err", err)
	}
}

// ended records that the engine let go of j; its slot goes back with the
// next flush, which it starts unless one is running.
func (g *globalLimits) ended(j *store.Job) {
	r, ok := g.rules[j.Task]
	if !ok || r.Concurrency <= 0 {
		return
	}
	k := store.ScopeKey{Scope: store.TaskScope(j.Task)}
	g.mu.Lock()
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
			if g.held[k] <= 0 {
				delete(g.held, k)
			}
		}
		clear(g.toGive)
		g.mu.Unlock()
		if err := g.st.LimitGive(context.WithoutCancel(g.e.jobCtx), g.e.cfg.WorkerID, gives, g.e.cfg.Now()); err != nil {
			// The slots expire with this process's lease instead.
			g.e.log.Warn("global limits: give back slots", "err", err)
		}
		g.e.signalSlot() // another round may take them again
	}
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
	g.mu.Lock()
	keys := make([]store.ScopeKey, 0, len(g.held))
	for k := range g.held {
		keys = append(keys, k)
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

// give appends what group gr of a round must give back after claiming
// n jobs: the unused slots and tokens, and, under a rate, the used tokens
// restamped to now, when the jobs start (see store.LimitGive).
func (g *globalLimits) give(gives []store.LimitGive, gr claimGroup, n int, at time.Time) []store.LimitGive {
	r := g.rules[gr.tasks[0]]
	out := store.LimitGive{Scope: store.TaskScope(gr.tasks[0]), At: at}
	if r.Concurrency > 0 {
		out.Slots = gr.granted - n
	}
	if r.Rate > 0 {
		out.Tokens = gr.granted - n
		if n > 0 {
			out.Used, out.StartedAt = n, g.e.cfg.Now()
		}
	}
	if out.Slots > 0 || out.Tokens > 0 || out.Used > 0 {
		gives = append(gives, out)
	}
	return gives
}
