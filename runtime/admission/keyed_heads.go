package admission

import (
	"context"
	"errors"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Fair per-key admission. A keyed claim reads a window of the task's
// first ready jobs in claim order (PeekKeys). When that window is full
// and does not give the round enough jobs of keys below their limit (a
// deep backlog of one key, or of many keys at their limit, ahead of
// another key's job), the round walks the task's keys behind it
// (store.KeyClaimer.KeyHeads) for the first job of each key neither in
// the window nor known to be at its limit, and takes starts for them in
// the same transaction as the window's. A key below its limit thus
// starts within the round however deep the backlog ahead of it. The
// walk costs one index seek per key it passes (never per job), resumes
// where the last one stopped (so every key is reached in turn), and
// after a walk that found nothing the next waits four times as long as
// that walk took (at least a poll interval), which bounds its share of
// the process's time when every key is at its limit.

// keyWalk is where the next walk of one task's keys resumes.
type keyWalk struct {
	after string    // the key the last walk stopped at ("": the first)
	next  time.Time // no walk before then (after one that found nothing)
	// refresh is when the keys at their limit may be read again.
	refresh time.Time
}

// refreshBlocked reads which of task's keys are at their limit now, over
// every process (one read of the limits' state rows), and marks them
// blocked for a poll interval, so that the window and the walk pass them
// by without a take each: keys another process holds, or whose rate
// this process has not asked for yet, would otherwise be learnt only a
// round's room at a time. It runs only when the window is full and a key
// of the task was found at its limit, at most once per poll interval
// (and four times its own duration).
func (g *globalLimits) refreshBlocked(ctx context.Context, task, scope string, now time.Time) {
	g.keys.mu.Lock()
	w := g.keys.walk(task)
	due := !now.Before(w.refresh)
	if due {
		due = false
		for k, until := range g.keys.blocked {
			if k.Scope == scope && now.Before(until) {
				due = true
				break
			}
		}
	}
	g.keys.mu.Unlock()
	if !due {
		return
	}
	start := time.Now()
	us, err := g.st.LimitUsage(ctx, now)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
			g.e.log.WarnContext(ctx, "global limits: read keys at their limit", "task", task, "err", err)
		}
		return
	}
	until := now.Add(g.poll())
	g.keys.mu.Lock()
	defer g.keys.mu.Unlock()
	for _, u := range us {
		r := u.Rule
		if u.Scope == scope && u.Key != "" && (r.Concurrency > 0 && u.Running >= r.Concurrency || r.Rate > 0 && u.Started >= r.Rate) {
			k := store.ScopeKey{Scope: scope, Key: u.Key}
			if g.keys.blocked[k].Before(until) {
				g.keys.blocked[k] = until
			}
		}
	}
	w.refresh = now.Add(max(g.poll(), 4*time.Since(start)))
}

// walk returns task's walk state. It holds k.mu.
func (k *keyedLimits) walk(task string) *keyWalk {
	w := k.walks[task]
	if w == nil {
		w = &keyWalk{}
		k.walks[task] = w
	}
	return w
}

// perKeyWant is the most starts a round asks one key for: its
// concurrency or its rate's burst, whichever binds (asking a key for more
// would only keep the round from other keys).
func perKeyWant(r store.LimitRule) int {
	n := r.Concurrency
	if r.Rate > 0 && (n == 0 || r.Rate < n) {
		n = r.Rate
	}
	if n <= 0 {
		return 1
	}
	return n
}

// skipped returns the keys a walk of scope's keys leaves out: those of
// the window (keyOf: their first jobs are in it) and those known to be
// at their limit. It holds k.mu.
func (k *keyedLimits) skipped(scope string, keyOf []string, now time.Time) []string {
	seen := make(map[string]bool, len(keyOf))
	skip := make([]string, 0, len(keyOf))
	for _, key := range keyOf {
		if !seen[key] {
			seen[key] = true
			skip = append(skip, key)
		}
	}
	for sk, until := range k.blocked {
		if sk.Scope == scope && now.Before(until) && !seen[sk.Key] {
			seen[sk.Key] = true
			skip = append(skip, sk.Key)
		}
	}
	return skip
}

// walkKeys returns the first ready jobs of up to want keys of task not
// in skip, from where the last walk stopped (wrapping around once).
func (g *globalLimits) walkKeys(ctx, cctx context.Context, params store.ClaimParams, task, by string, skip []string,
	want int, now time.Time) []store.KeyCandidate {
	e := g.e
	g.keys.mu.Lock()
	w := g.keys.walk(task)
	after, next := w.after, w.next
	g.keys.mu.Unlock()
	if now.Before(next) {
		return nil
	}
	start := time.Now()
	heads, stop, err := g.keys.st.KeyHeads(cctx, params, by, after, skip, want)
	if err == nil && stop == "" && after != "" && len(heads) < want {
		// The walk reached the last key: go on from the first.
		for _, h := range heads {
			skip = append(skip, store.LimitKey(by, h.Value, h.Missing))
		}
		var more []store.KeyCandidate
		more, stop, err = g.keys.st.KeyHeads(cctx, params, by, "", skip, want-len(heads))
		heads = append(heads, more...)
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
			e.log.WarnContext(ctx, "global limits: walk keys", "task", task, "err", err)
		}
		return nil
	}
	g.keys.mu.Lock()
	w.after, w.next = stop, time.Time{}
	if len(heads) == 0 {
		w.next = now.Add(max(g.poll(), 4*time.Since(start)))
	}
	g.keys.mu.Unlock()
	return heads
}
