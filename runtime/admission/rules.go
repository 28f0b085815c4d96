// Package admission decides what a process claims and starts, and shows
// why a job waits: the tasks' shared circuit breakers (their stored row is
// a breaker's only state), the in-process rate limiters, the global,
// per-key and queue limits held in the store, and the queue caps.
//
// The engine asks one Controller: once per claim round (Round: plan by the
// breakers and rate limiters, take the stored limits' starts, claim each
// group through the engine's Claimer, give back what the round did not
// use) and at each job's start and end (Start, End or Drop, Record or
// ReleaseProbe, and Held for the queue caps). Rules derives the engine's
// rules from a client's task options and checks them; Infos, LimitHeld,
// Breakers and BreakerHeld are what Stats and job listings show.
//
// Not API: import github.com/queuemax/queuemax instead.
package admission

import (
	"fmt"

	"github.com/queuemax/queuemax/runtime/store"
)

// maxLimitByLen bounds TaskRule.By.
const maxLimitByLen = 64

// TaskRule is one task's limits as its options state them: Global over
// every process (TaskOptions.GlobalRateLimit, GlobalConcurrency), Key
// per value of the payload key By (KeyRateLimit, KeyConcurrency).
type TaskRule struct {
	Global, Key store.LimitRule
	By          string
}

// PerKey is the rule a task limited per key applies to each key: its Key
// limits, or, without them, its global ones (limit_by alone).
func (r TaskRule) PerKey() store.LimitRule {
	if !r.Key.IsZero() {
		return r.Key
	}
	return r.Global
}

// Check says what is wrong with task's rule: a bad limit, Key limits
// without By, a By without a limit, or a By that is not a top-level
// payload key name (letters, digits, '_' and '-').
func (r TaskRule) Check(task string) error {
	if err := r.Global.Check(); err != nil {
		return fmt.Errorf("handler %q: global limit: %w", task, err)
	}
	if !r.Key.IsZero() {
		if r.By == "" {
			return fmt.Errorf("handler %q: %w: KeyRateLimit and KeyConcurrency need LimitBy (key_rate_limit= and key_concurrency= need limit_by=)",
				task, store.ErrInvalidLimit)
		}
		if err := r.Key.Check(); err != nil {
			return fmt.Errorf("handler %q: per-key limit: %w", task, err)
		}
	}
	by := r.By
	if by == "" {
		return nil
	}
	if r.Global.IsZero() && r.Key.IsZero() {
		return fmt.Errorf("handler %q: %w: limit_by %q needs a global limit (GlobalRateLimit or GlobalConcurrency)",
			task, store.ErrInvalidLimit, by)
	}
	if len(by) > maxLimitByLen {
		return fmt.Errorf("handler %q: %w: limit_by key is %d bytes (at most %d)", task, store.ErrInvalidLimit, len(by), maxLimitByLen)
	}
	for _, c := range by {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("handler %q: %w: limit_by %q is not a payload key name (letters, digits, '_', '-')",
				task, store.ErrInvalidLimit, by)
		}
	}
	return nil
}

// Rules are the limits of a client's tasks, by task name.
type Rules map[string]TaskRule

// Global returns the tasks' global limits (nil if none has one).
func (rs Rules) Global() map[string]store.LimitRule {
	return rs.collect(func(r TaskRule) (store.LimitRule, bool) { return r.Global, !r.Global.IsZero() })
}

// Engine returns the rule the engine takes per task: a task's global
// limits, or, for a task limited per key with Key limits, its per-key
// rule (its task-wide one is in Wide).
func (rs Rules) Engine() map[string]store.LimitRule {
	return rs.collect(func(r TaskRule) (store.LimitRule, bool) {
		if r.By != "" && !r.Key.IsZero() {
			return r.Key, true
		}
		return r.Global, !r.Global.IsZero()
	})
}

// Wide returns, per task limited per key with Key limits, its task-wide
// global limits (nil if none).
func (rs Rules) Wide() map[string]store.LimitRule {
	return rs.collect(func(r TaskRule) (store.LimitRule, bool) {
		return r.Global, r.By != "" && !r.Key.IsZero() && !r.Global.IsZero()
	})
}

// By returns, per task with a limit and a By, its payload key.
func (rs Rules) By() map[string]string {
	var out map[string]string
	for name, r := range rs {
		if r.By != "" && !r.PerKey().IsZero() {
			if out == nil {
				out = make(map[string]string)
			}
			out[name] = r.By
		}
	}
	return out
}

func (rs Rules) collect(f func(TaskRule) (store.LimitRule, bool)) map[string]store.LimitRule {
	var out map[string]store.LimitRule
	for name, r := range rs {
		if l, ok := f(r); ok {
			if out == nil {
				out = make(map[string]store.LimitRule)
			}
			out[name] = l
		}
	}
	return out
}
