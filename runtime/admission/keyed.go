package admission

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Per-key limits (Config.LimitBy): a task's global limits apply per
// distinct value of a top-level payload key. A claim round of such a task
// peeks a bounded number of its ready jobs in claim order with their
// keys' values (store.KeyClaimer.PeekKeys), takes starts for every key
// seen in one store call (one LimitTake per key), claims exactly the
// granted jobs by id, and gives back in one call what it did not claim.
// A key at its limit thus holds back only its own jobs. The process keeps
// no state per key beyond the slots of its running jobs (keyed slots are
// never pooled: each goes back, batched, when its job ends), and the
// store deletes a key's row once it holds nothing.

// keyedLimits is the per-key side of globalLimits.
type keyedLimits struct {
	st store.KeyClaimer
	by map[string]string // task → payload key
	mu sync.Mutex
	of map[store.JobID]store.ScopeKey // running keyed jobs' slots
	// blocked holds the keys a take found at their limit, until when
	// rounds skip them (a slot of theirs ending here unblocks them).
	blocked map[store.ScopeKey]time.Time
	// walks is, per task, where the next walk of the keys behind the
	// window resumes and when it may run (keyed_heads.go).
	walks map[string]*keyWalk
	// wide are the tasks' limits over all keys (wide.go), and
	// wideOf the running keyed jobs that hold a slot of theirs.
	wide   map[string]store.LimitRule
	wideOf map[store.JobID]bool
}

func newKeyedLimits(e *Controller) *keyedLimits {
	kc := e.cfg.Store
	if len(e.cfg.LimitBy) == 0 {
		return nil
	}
	return &keyedLimits{st: kc, by: e.cfg.LimitBy, of: make(map[store.JobID]store.ScopeKey),
		blocked: make(map[store.ScopeKey]time.Time), walks: make(map[string]*keyWalk),
		wide: e.cfg.WideLimits, wideOf: make(map[store.JobID]bool)}
}

// keyBy returns the payload key task's limits apply per ("" if none).
func (g *globalLimits) keyBy(task string) string {
	if g == nil || g.keys == nil {
		return ""
	}
	if _, ok := g.rules[task]; !ok {
		return ""
	}
	return g.keys.by[task]
}

// jobKey returns the state row whose slot j holds and forgets it: the
// task's row, or, for a keyed job, its key's.
func (g *globalLimits) jobKey(j *store.Job) store.ScopeKey {
	if g.keys != nil && g.keys.by[j.Task] != "" {
		g.keys.mu.Lock()
		k, ok := g.keys.of[j.ID]
		delete(g.keys.of, j.ID)
		delete(g.keys.blocked, k)
		g.keys.mu.Unlock()
		if ok {
			return k
		}
	}
	return store.ScopeKey{Scope: store.TaskScope(j.Task)}
}

// keyedWant is how many jobs a round may claim of keyed group gr: under a
// rate, only as many as workers are free (as for an unkeyed rate).
func (g *globalLimits) keyedWant(gr claimGroup) int {
	if g.rules[gr.tasks[0]].Rate > 0 {
		return min(gr.max, max(int(g.e.limit.Load()-g.e.executing.Load()), 1))
	}
	return gr.max
}

// peekSize is how many ready jobs a keyed claim of room jobs looks at
// first, in claim order: enough to serve the usual mix of keys in one
// read; the keys behind it are reached by a walk of the keys when it
// is not (keyed_heads.go).
func peekSize(room int) int { return min(max(4*room, 32), 512) }

// claimKeyed claims up to room jobs of keyed group gr; see the top of the
// file. It returns the jobs and how soon a key left out may be granted
// more (an hour if none was).
func (g *globalLimits) claimKeyed(ctx context.Context, cl Claimer, gr claimGroup, room int, now time.Time) ([]*store.Job, time.Duration) {
	e, task := g.e, gr.tasks[0]
	by, r := g.keys.by[task], g.rules[task]
	retryIn := time.Hour
	params := store.ClaimParams{WorkerID: e.cfg.WorkerID, Now: now, Tasks: []string{task}, Order: cl.Order(),
		Queues: e.queues.limits()}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cands, err := g.keys.st.PeekKeys(cctx, params, by, peekSize(room))
	if err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
		e.out.Fail(ctx, slog.LevelWarn, "keyed limits peek", "global limits: peek keyed jobs", err, "task", task)
	}
	if len(cands) == 0 {
		return nil, retryIn
	}
	// One take per key, for the first room jobs in claim order whose keys
	// are not known to be at their limit, in one transaction.
	scope := store.TaskScope(task)
	if len(cands) == peekSize(room) {
		g.refreshBlocked(cctx, task, scope, now) // keyed_heads.go
	}
	keyOf := make([]string, len(cands))
	at := make(map[string]int)
	var takes []store.LimitTake
	wanted, skipped := 0, false
	perKey := perKeyWant(r)
	g.keys.mu.Lock()
	for k, until := range g.keys.blocked {
		if !now.Before(until) {
			delete(g.keys.blocked, k)
		}
	}
	for i, c := range cands {
		k := store.LimitKey(by, c.Value, c.Missing)
		keyOf[i] = k
		if wanted == room {
			continue
		}
		if _, ok := g.keys.blocked[store.ScopeKey{Scope: scope, Key: k}]; ok {
			skipped = true
			continue
		}
		if n, ok := at[k]; ok {
			if takes[n].Want < perKey {
				takes[n].Want++
				wanted++
			}
			continue
		}
		wanted++
		at[k] = len(takes)
		takes = append(takes, store.LimitTake{Scope: scope, Key: k, Rule: r, Want: 1})
	}
	// The window may hold only keys at their limit, or fewer keys than
	// the round has room for, while other keys' jobs wait behind it: walk
	// the keys behind it for their first jobs (keyed_heads.go).
	var skip []string
	if wanted < room && len(cands) == peekSize(room) {
		skip = g.keys.skipped(scope, keyOf, now)
	}
	g.keys.mu.Unlock()
	if skip != nil {
		for _, c := range g.walkKeys(ctx, cctx, params, task, by, skip, room-wanted, now) {
			k := store.LimitKey(by, c.Value, c.Missing)
			if _, ok := at[k]; ok {
				continue
			}
			cands = append(cands, c)
			keyOf = append(keyOf, k)
			wanted++
			at[k] = len(takes)
			takes = append(takes, store.LimitTake{Scope: scope, Key: k, Rule: r, Want: 1})
		}
	}
	if skipped {
		retryIn = min(retryIn, g.poll())
	}
	if len(takes) == 0 {
		g.waits[task].Add(1)
		return nil, retryIn
	}
	wide, wideN := g.keys.wide[task], len(cands)
	if !wide.IsZero() {
		// The task's limit over all keys, in the same transaction.
		takes = append(takes, store.LimitTake{Scope: scope, Rule: wide, Want: g.wideWant(wide, wanted)})
	}
	grants, err := g.st.LimitTake(cctx, e.cfg.WorkerID, takes, now, now.Add(g.expiry()))
	if err != nil {
		e.out.Fail(ctx, slog.LevelWarn, "keyed limits", "global limits: take failed", err)
		return nil, g.poll()
	}
	var wideAt time.Time
	if !wide.IsZero() {
		n := len(takes) - 1
		wideN, wideAt = grants[n].N, grants[n].At
		if wideN < takes[n].Want {
			retryIn = min(retryIn, g.poll())
			if !grants[n].RetryAt.IsZero() {
				retryIn = min(retryIn, max(grants[n].RetryAt.Sub(now), time.Millisecond))
			}
		}
		takes, grants = takes[:n], grants[:n] // the unused wide ones go back below

	}
	// The granted jobs, in claim order, within room and the queues' caps.
	left := make([]int, len(takes))
	g.keys.mu.Lock()
	for i, gt := range grants {
		left[i] = gt.N
		if gt.N < takes[i].Want {
			until := now.Add(g.poll())
			if !gt.RetryAt.IsZero() {
				until = gt.RetryAt
			}
			g.keys.blocked[store.ScopeKey{Scope: scope, Key: takes[i].Key}] = until
			retryIn = min(retryIn, max(until.Sub(now), time.Millisecond))
		}
	}
	g.keys.mu.Unlock()
	var caps map[string]int
	if params.Queues != nil {
		caps = make(map[string]int, len(params.Queues))
		for _, q := range params.Queues {
			caps[store.QueueOf(q.Queue)] = q.Max
		}
	}
	var ids []store.JobID
	idKey := make(map[store.JobID]int)
	qleft := e.qlim.left() // the round's queue limits (queue.go)
	for i, c := range cands {
		n, ok := at[keyOf[i]]
		if !ok || len(ids) == room || len(ids) == wideN || left[n] == 0 {
			continue
		}
		if caps != nil {
			q := store.QueueOf(c.Queue)
			if caps[q] <= 0 {
				continue
			}
			caps[q]--
		}
		if !qleft.take(c.Queue) {
			continue
		}
		left[n]--
		ids = append(ids, c.ID)
		idKey[c.ID] = n
	}
	var jobs []*store.Job
	if len(ids) > 0 {
		jobs, err = g.keys.st.ClaimIDs(cctx, params, ids)
		e.qlim.claimed(jobs)
		if err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
			e.out.Fail(ctx, slog.LevelWarn, "keyed claims", "claim failed", err)
		}
	}
	if len(ids) > 0 && len(jobs) == 0 && err == nil {
		retryIn = min(retryIn, g.poll()) // another process took them
	}
	used := make([]int, len(takes))
	g.keys.mu.Lock()
	for _, j := range jobs {
		n := idKey[j.ID]
		used[n]++
		if r.Rate > 0 {
			e.stamp.add(j.ID, scope, takes[n].Key, grants[n].At) // moved to the handler's start (stamps.go)
		}
		if r.Concurrency > 0 {
			g.keys.of[j.ID] = store.ScopeKey{Scope: scope, Key: takes[n].Key}
		}
		if wide.Rate > 0 {
			e.stamp.add(j.ID, scope, "", wideAt)
		}
		if wide.Concurrency > 0 {
			g.keys.wideOf[j.ID] = true
		}
	}
	g.keys.mu.Unlock()
	var gives []store.LimitGive
	g.mu.Lock()
	for n, t := range takes {
		unused := grants[n].N - used[n]
		out := store.LimitGive{Scope: scope, Key: t.Key, At: grants[n].At}
		if r.Concurrency > 0 {
			out.Slots = unused
			if used[n] > 0 {
				g.held[store.ScopeKey{Scope: scope, Key: t.Key}] += used[n]
			}
		}
		if r.Rate > 0 {
			out.Tokens = unused
		}
		if out.Slots > 0 || out.Tokens > 0 {
			gives = append(gives, out)
		}
	}
	if !wide.IsZero() {
		gives = g.wideGive(gives, scope, wide, wideN, wideAt, len(jobs))
	}
	g.mu.Unlock()
	g.settle(ctx, gives)
	if len(jobs) == 0 {
		g.waits[task].Add(1)
	}
	return jobs, retryIn
}

// sweepKeys deletes the keyed state rows that hold nothing any more (no
// slot unexpired, no start within the window), which the takes and gives
// did not already delete: rate rows whose starts aged out. It runs with
// the slot renewal, once per interval, never per claim.
func (g *globalLimits) sweepKeys(ctx context.Context) {
	if g.keys == nil {
		return
	}
	var scopes []string
	age := g.expiry()
	for task, by := range g.keys.by {
		r, ok := g.rules[task]
		if by == "" || !ok {
			continue
		}
		scopes = append(scopes, store.TaskScope(task))
		if r.Rate > 0 {
			age = max(age, r.Window())
		}
	}
	if len(scopes) == 0 {
		return
	}
	sort.Strings(scopes)
	if _, err := g.keys.st.LimitSweep(ctx, scopes, g.e.cfg.Now(), age+time.Second); err != nil {
		g.e.out.Fail(ctx, slog.LevelWarn, "keyed limits sweep", "global limits: sweep keyed state", err)
	}
}
