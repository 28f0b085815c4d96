package admission

import (
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// A task limited per key may also carry limits over all its keys
// together (Config.WideLimits: "at most 10 at once, 1 per customer").
// The keyed claim (keyed.go) then takes, in the same transaction as
// the keys' starts, as many starts of the task's own state row (key "")
// as it asks of its keys, and claims at most what both granted. A job
// holds a slot of its key and one of the task, each going back when it
// ends; under a rate, both tokens move to the handler's start.

// wideWant is how many starts a keyed round asks the task-wide rule
// for: as many as of its keys, under a rate only for the free workers.
func (g *globalLimits) wideWant(r store.LimitRule, wanted int) int {
	if r.Rate > 0 {
		wanted = min(wanted, max(int(g.e.limit.Load()-g.e.executing.Load()), 1))
	}
	return max(wanted, 1)
}

// wideGive appends to gives the task-wide starts a round was granted (n
// at at) and did not use (it claimed used jobs); the used slots are held.
// It holds g.mu.
func (g *globalLimits) wideGive(gives []store.LimitGive, scope string, r store.LimitRule, n int, at time.Time, used int) []store.LimitGive {
	out := store.LimitGive{Scope: scope, At: at}
	if r.Concurrency > 0 {
		out.Slots = n - used
		if used > 0 {
			g.held[store.ScopeKey{Scope: scope}] += used
		}
	}
	if r.Rate > 0 {
		out.Tokens = n - used
	}
	if out.Slots > 0 || out.Tokens > 0 {
		gives = append(gives, out)
	}
	return gives
}

// wideEnded forgets that keyed job j holds a task-wide slot and reports
// whether it did.
func (g *globalLimits) wideEnded(j *store.Job) bool {
	if g.keys == nil || g.keys.wide[j.Task].Concurrency <= 0 {
		return false
	}
	g.keys.mu.Lock()
	defer g.keys.mu.Unlock()
	held := g.keys.wideOf[j.ID]
	delete(g.keys.wideOf, j.ID)
	return held
}
