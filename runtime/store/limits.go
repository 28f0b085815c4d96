package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Global limits (TaskOptions.GlobalRateLimit, GlobalConcurrency, LimitBy
// and the queue limits) are decided at claim time against one state row per
// scope and key, held in the store so that every process sees the same
// state: no leader, no per-key goroutine. A claim first takes starts from
// the rows (Limiter.LimitTake), then claims at most that many jobs, then
// gives back what it did not claim; a job's concurrency slot is given back
// when the job ends (LimitGive, batched), or expires with its process's
// lease (LimitRefresh renews it), so a process killed with kill -9 never
// holds a slot for good.

// TaskScope and QueueScope name the scope of a task's or a queue's limits.
func TaskScope(task string) string   { return "task:" + task }
func QueueScope(queue string) string { return "queue:" + queue }

// LimitRule is the limits of one scope. The zero rule limits nothing.
type LimitRule struct {
	// Rate starts per Per, over every process: a bucket of Rate tokens,
	// a token spent at t coming back at t+Per, so at most Rate jobs start
	// in any window of length Per and a full bucket lets Rate start at
	// once. Zero: no rate limit.
	Rate int           `json:"rate,omitempty"`
	Per  time.Duration `json:"per,omitempty"`
	// Concurrency caps the jobs running at once; zero: no cap.
	Concurrency int `json:"concurrency,omitempty"`
}

// window is how long a spent token stays out: Per and a margin of Per/50
// (at least a millisecond) for the time between a start's record and the
// handler's start, so that no window of Per sees more than Rate starts
// measured where the handlers run.
func (r LimitRule) window() time.Duration { return r.Per + max(r.Per/50, time.Millisecond) }

// IsZero reports whether r limits nothing.
func (r LimitRule) IsZero() bool { return r.Rate <= 0 && r.Concurrency <= 0 }

// LimitTake asks for up to Want starts of one scope and key.
type LimitTake struct {
	Scope, Key string
	// Rule is the caller's rule (a task's options). For a queue scope it
	// is ignored: the queue's stored rule (SetQueueLimits) applies.
	Rule LimitRule
	Want int
}

// LimitGrant answers one LimitTake: N starts granted (N ≤ Want). When N
// is below Want because of the rate, RetryAt is when the next token comes
// back; it is zero when the cap of running jobs binds (the next slot comes
// back when a job ends).
type LimitGrant struct {
	N       int
	RetryAt time.Time
	// At is when the store recorded the starts, on its clock: pass it
	// back unchanged as LimitGive.At.
	At time.Time
}

// LimitGive gives back what a take granted and a claim did not use
// (Tokens and Slots, with At the take's time), or the slots of jobs that
// ended (Slots only); At is the take's LimitGrant.At. Used, with StartedAt
// (the caller's clock), moves that many tokens of the take at At to
// StartedAt, when the claimed jobs started: the bucket then
// counts a start from when it happened rather than from when its token
// was taken.
type LimitGive struct {
	Scope, Key string
	Slots      int
	Tokens     int
	At         time.Time
	Used       int
	StartedAt  time.Time
}

// LimitUsage is one state row as Limiter.LimitUsage reports it.
type LimitUsage struct {
	Scope, Key string
	Rule       LimitRule
	// Running is the slots held by live processes; Started the starts
	// in the last Rule.Per (rate).
	Running, Started int
	UpdatedAt        time.Time
}

// Limiter is the global and queue limit part of Store. Every
// method's now is the caller's clock (a PostgreSQL store uses its own).
type Limiter interface {
	// LimitTake takes starts for owner (a process's worker ID) in one
	// transaction: for each take, up to Want under its rule's rate and
	// concurrency; each start granted holds a slot until given back or
	// until expires (renewed by LimitRefresh).
	LimitTake(ctx context.Context, owner string, takes []LimitTake, now, expires time.Time) ([]LimitGrant, error)
	// LimitGive gives back slots and unused tokens of owner.
	LimitGive(ctx context.Context, owner string, gives []LimitGive, now time.Time) error
	// LimitRefresh moves the expiry of every slot owner holds in scopes to
	// expires.
	LimitRefresh(ctx context.Context, owner string, scopes []ScopeKey, now, expires time.Time) error
	// LimitUsage returns every state row, ordered by scope and key.
	LimitUsage(ctx context.Context, now time.Time) ([]LimitUsage, error)
	// SetQueueLimits stores queue's rule (the zero rule removes it); every
	// process applies it from its next claim on.
	SetQueueLimits(ctx context.Context, queue string, r LimitRule, now time.Time) error
	// QueueLimits returns every queue's stored rule.
	QueueLimits(ctx context.Context) (map[string]LimitRule, error)
}

// ScopeKey names one state row.
type ScopeKey struct{ Scope, Key string }

// LimitState is one state row's content, kept as JSON in the store.
type LimitState struct {
	Rule LimitRule `json:"rule"`
	// Log holds the starts of the last Rule.Per: [unix ms, count] pairs,
	// oldest first.
	Log [][2]int64 `json:"log,omitempty"`
	// Slots maps each owner to [slots held, expiry unix ms].
	Slots map[string][2]int64 `json:"slots,omitempty"`
}

// DecodeLimitState reads a state column; a bad or empty one is the empty
// state.
func DecodeLimitState(s string) LimitState {
	var st LimitState
	if s != "" {
		_ = json.Unmarshal([]byte(s), &st)
	}
	return st
}

// Encode returns st as its state column.
func (st *LimitState) Encode() string {
	b, _ := json.Marshal(st)
	return string(b)
}

// prune drops starts older than the rule's period and expired slots.
func (st *LimitState) prune(now time.Time) {
	ms := now.UnixMilli()
	if st.Rule.Rate > 0 && st.Rule.Per > 0 {
		cut := ms - st.Rule.window().Milliseconds()
		i := 0
		for i < len(st.Log) && st.Log[i][0] <= cut {
			i++
		}
		st.Log = st.Log[i:]
	} else {
		st.Log = nil
	}
	for o, h := range st.Slots {
		if h[0] <= 0 || h[1] <= ms {
			delete(st.Slots, o)
		}
	}
}

// Usage returns the slots held and the starts of the last period at now.
func (st *LimitState) Usage(now time.Time) (running, started int) {
	st.prune(now)
	for _, h := range st.Slots {
		running += int(h[0])
	}
	for _, e := range st.Log {
		started += int(e[1])
	}
	return running, started
}

// Take grants up to want starts to owner at now under rule (which
// replaces the stored one), holding their slots until expires.
func (st *LimitState) Take(owner string, rule LimitRule, want int, now, expires time.Time) LimitGrant {
	st.Rule = rule
	running, started := st.Usage(now)
	n := want
	var retry time.Time
	if rule.Concurrency > 0 {
		n = min(n, rule.Concurrency-running)
	}
	if rule.Rate > 0 && rule.Per > 0 {
		if left := rule.Rate - started; left < n {
			n = left
			// The oldest start that frees a token.
			need, sum := started-rule.Rate+max(n, 0)+1, 0
			for _, e := range st.Log {
				sum += int(e[1])
				if sum >= need {
					retry = time.UnixMilli(e[0]).Add(rule.window() + time.Millisecond)
					break
				}
			}
		}
	}
	n = max(n, 0)
	if n == 0 {
		return LimitGrant{RetryAt: retry}
	}
	ms := now.UnixMilli()
	if rule.Rate > 0 && rule.Per > 0 {
		if l := len(st.Log); l > 0 && st.Log[l-1][0] >= ms {
			ms = st.Log[l-1][0]
			st.Log[l-1][1] += int64(n) // a clock step back joins the last entry
		} else {
			st.Log = append(st.Log, [2]int64{ms, int64(n)})
		}
	}
	if rule.Concurrency > 0 {
		if st.Slots == nil {
			st.Slots = make(map[string][2]int64)
		}
		h := st.Slots[owner]
		st.Slots[owner] = [2]int64{h[0] + int64(n), max(h[1], expires.UnixMilli())}
	}
	return LimitGrant{N: n, RetryAt: retry, At: time.UnixMilli(ms)}
}

// Give gives back owner's slots and the tokens of its take at g.At.
func (st *LimitState) Give(owner string, g LimitGive, now time.Time) {
	if h, ok := st.Slots[owner]; ok && g.Slots > 0 {
		h[0] = max(h[0]-int64(g.Slots), 0)
		st.Slots[owner] = h
	}
	if g.Tokens > 0 || g.Used > 0 && !g.StartedAt.IsZero() {
		at, left := g.At.UnixMilli(), int64(g.Tokens)
		if !g.StartedAt.IsZero() {
			left += int64(g.Used)
		}
		for i := len(st.Log) - 1; i >= 0 && left > 0; i-- {
			if st.Log[i][0] > at {
				continue
			}
			d := min(left, st.Log[i][1])
			st.Log[i][1] -= d
			left -= d
		}
		st.Log = slices.DeleteFunc(st.Log, func(e [2]int64) bool { return e[1] <= 0 })
		// The used tokens count from StartedAt even when their take's entry
		// is gone (older than the window: the job started more than a
		// period after its claim): those starts happened then.
		if n := int64(max(g.Used, 0)); n > 0 && !g.StartedAt.IsZero() {
			ms := max(g.StartedAt.UnixMilli(), at)
			i, _ := slices.BinarySearchFunc(st.Log, ms, func(e [2]int64, t int64) int { return int(e[0] - t) })
			if i < len(st.Log) && st.Log[i][0] == ms {
				st.Log[i][1] += n
			} else {
				st.Log = slices.Insert(st.Log, i, [2]int64{ms, n})
			}
		}
	}
	st.prune(now)
}

// Refresh moves owner's slot expiry to expires.
func (st *LimitState) Refresh(owner string, expires time.Time) bool {
	h, ok := st.Slots[owner]
	if !ok || h[0] <= 0 {
		return false
	}
	h[1] = expires.UnixMilli()
	st.Slots[owner] = h
	return true
}

// Empty reports whether the state holds nothing but a rule (no slots, no
// recent starts): its row may be deleted.
func (st *LimitState) Empty() bool { return len(st.Log) == 0 && len(st.Slots) == 0 }

// SortUsage orders usage rows by scope and key.
func SortUsage(us []LimitUsage) {
	sort.Slice(us, func(i, j int) bool {
		if us[i].Scope != us[j].Scope {
			return us[i].Scope < us[j].Scope
		}
		return us[i].Key < us[j].Key
	})
}

// ErrInvalidLimit is wrapped by LimitRule.Check's errors.
var ErrInvalidLimit = errors.New("queuemax: invalid limit")

// Check reports what is wrong with r: a negative count, or a rate without
// a positive period.
func (r LimitRule) Check() error {
	switch {
	case r.Rate < 0 || r.Concurrency < 0:
		return fmt.Errorf("%w: rate %d, concurrency %d (want ≥ 0)", ErrInvalidLimit, r.Rate, r.Concurrency)
	case r.Rate > 0 && r.Per <= 0:
		return fmt.Errorf("%w: rate %d per %v (want a positive period)", ErrInvalidLimit, r.Rate, r.Per)
	}
	return nil
}
