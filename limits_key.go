package queuemax

import (
	"fmt"
	"strings"

	"github.com/queuemax/queuemax/runtime/store"
)

// maxLimitByLen bounds TaskOptions.LimitBy.
const maxLimitByLen = 64

// checkLimitBy validates a handler's LimitBy: a top-level payload key
// (letters, digits, '_' and '-'), only together with a global limit.
func checkLimitBy(h *Handler) error {
	by := h.Options.LimitBy
	if kr := keyRule(h.Options); !kr.IsZero() {
		if by == "" {
			return fmt.Errorf("handler %q: %w: KeyRateLimit and KeyConcurrency need LimitBy (key_rate_limit= and key_concurrency= need limit_by=)",
				h.Name, ErrInvalidLimit)
		}
		if err := kr.Check(); err != nil {
			return fmt.Errorf("handler %q: per-key limit: %w", h.Name, err)
		}
	}
	if by == "" {
		return nil
	}
	if globalRule(h.Options).IsZero() && keyRule(h.Options).IsZero() {
		return fmt.Errorf("handler %q: %w: limit_by %q needs a global limit (GlobalRateLimit or GlobalConcurrency)",
			h.Name, ErrInvalidLimit, by)
	}
	if len(by) > maxLimitByLen {
		return fmt.Errorf("handler %q: %w: limit_by key is %d bytes (at most %d)", h.Name, ErrInvalidLimit, len(by), maxLimitByLen)
	}
	for _, r := range by {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("handler %q: %w: limit_by %q is not a payload key name (letters, digits, '_', '-')",
				h.Name, ErrInvalidLimit, by)
		}
	}
	return nil
}

// keyRule is a task's limits per key as TaskOptions.KeyRateLimit and
// KeyConcurrency state them (zero: none; see perKeyRule).
func keyRule(o TaskOptions) store.LimitRule {
	return store.LimitRule{Rate: o.KeyRateLimit.Limit, Per: o.KeyRateLimit.Per, Concurrency: o.KeyConcurrency}
}

// perKeyRule is the rule a task limited per key applies to each key: its
// Key limits, or, without them, its global ones (limit_by alone).
func perKeyRule(o TaskOptions) store.LimitRule {
	if r := keyRule(o); !r.IsZero() {
		return r
	}
	return globalRule(o)
}

// engineRules returns the rules the engine takes per task: a task's
// global limits, or, for a task limited per key, its per-key rule (its
// task-wide one is in wideRules).
func (c *Client) engineRules() map[string]store.LimitRule {
	out := c.globalRules()
	for name, h := range c.handlers {
		if h.Options.LimitBy != "" && !keyRule(h.Options).IsZero() {
			if out == nil {
				out = make(map[string]store.LimitRule)
			}
			out[name] = keyRule(h.Options)
		}
	}
	return out
}

// wideRules returns, per task limited per key with Key limits, its
// task-wide global limits (nil if none).
func (c *Client) wideRules() map[string]store.LimitRule {
	var out map[string]store.LimitRule
	for name, h := range c.handlers {
		if h.Options.LimitBy != "" && !keyRule(h.Options).IsZero() && !globalRule(h.Options).IsZero() {
			if out == nil {
				out = make(map[string]store.LimitRule)
			}
			out[name] = globalRule(h.Options)
		}
	}
	return out
}

// limitBys returns, per task with a global limit and a LimitBy, its key.
func (c *Client) limitBys() map[string]string {
	var out map[string]string
	for name, h := range c.handlers {
		if h.Options.LimitBy != "" && !perKeyRule(h.Options).IsZero() {
			if out == nil {
				out = make(map[string]string)
			}
			out[name] = h.Options.LimitBy
		}
	}
	return out
}

// fillKeyedHeld sets Held on the ready jobs of tasks limited per key
// whose key's limit is reached, from usage (every state row). The task's
// LimitBy is this client's option, or, for a task this client has no
// handler of, the key names the stored rows carry.
func (c *Client) fillKeyedHeld(jobs []*Job, usage []store.LimitUsage) {
	rows := make(map[store.ScopeKey]store.LimitUsage)
	bys := make(map[string]map[string]bool) // task → payload keys in use
	for _, u := range usage {
		task, ok := strings.CutPrefix(u.Scope, "task:")
		by, _, cut := strings.Cut(u.Key, "=")
		if !ok || !cut || by == "" {
			continue
		}
		rows[store.ScopeKey{Scope: u.Scope, Key: u.Key}] = u
		if bys[task] == nil {
			bys[task] = make(map[string]bool)
		}
		bys[task][by] = true
	}
	if len(rows) == 0 {
		return
	}
	for _, j := range jobs {
		if j == nil || j.Status != StatusPending || j.Held != "" {
			continue
		}
		candidates := bys[j.Task]
		if h, ok := c.handlers[j.Task]; ok && h.Options.LimitBy != "" {
			candidates = map[string]bool{h.Options.LimitBy: true}
		}
		for by := range candidates {
			v, ok := store.PayloadKey(j.Payload, by)
			key := store.LimitKey(by, v, !ok)
			if u, ok := rows[store.ScopeKey{Scope: store.TaskScope(j.Task), Key: key}]; ok {
				if r := keyedHeldReason(j.Task, key, u); r != "" {
					j.Held = r
					break
				}
			}
		}
	}
}

// keyedHeldReason says which limit of task key's row u reached, e.g.
// "global concurrency of task shop.Charge reached for customer_id=42
// (1/1 running)", or "" if none is.
func keyedHeldReason(task, key string, u store.LimitUsage) string {
	r := u.Rule
	switch {
	case r.Concurrency > 0 && u.Running >= r.Concurrency:
		return fmt.Sprintf("global concurrency of task %s reached for %s (%d/%d running)", task, key, u.Running, r.Concurrency)
	case r.Rate > 0 && u.Started >= r.Rate:
		return fmt.Sprintf("global rate limit of task %s reached for %s (%d/%d started in the last %s)", task, key, u.Started, r.Rate, r.Per)
	}
	return ""
}

// keyedLimitInfos completes the task limits of out that apply per key
// (By, Keys, and the busiest key's use) and adds those of tasks limited
// per key that only other processes run, from usage.
func (c *Client) keyedLimitInfos(out []GlobalLimitInfo, usage []store.LimitUsage) []GlobalLimitInfo {
	type agg struct {
		by            string
		rule          store.LimitRule
		keys          int
		running, strt int
	}
	byTask := make(map[string]*agg)
	for _, u := range usage {
		task, ok := strings.CutPrefix(u.Scope, "task:")
		by, _, cut := strings.Cut(u.Key, "=")
		if !ok || !cut || by == "" {
			continue
		}
		a := byTask[task]
		if a == nil {
			a = &agg{by: by, rule: u.Rule}
			byTask[task] = a
		}
		a.keys++
		a.running, a.strt = max(a.running, u.Running), max(a.strt, u.Started)
	}
	// The entries of out are the tasks' own rows: per key for a task of
	// this client limited per key by its global limits alone; over all
	// keys (task-wide) for one with Key limits, or of another process.
	seen := make(map[string]bool)
	for i := range out {
		g := &out[i]
		h, ok := c.handlers[g.Name]
		if g.Scope != "task" || !ok || h.Options.LimitBy == "" || !keyRule(h.Options).IsZero() {
			continue
		}
		seen[g.Name] = true
		g.By, g.Keys, g.Running, g.Started, g.Slots = h.Options.LimitBy, 0, 0, 0, 0
		if a := byTask[g.Name]; a != nil {
			g.Keys, g.Running, g.Slots = a.keys, a.running, a.running
			if g.Rate > 0 {
				g.Started = a.strt
			}
		}
	}
	// The per-key limits of this client's tasks with Key limits, then
	// those of tasks only other processes run.
	for name, h := range c.handlers {
		if h.Options.LimitBy == "" || keyRule(h.Options).IsZero() {
			continue
		}
		a := byTask[name]
		if a == nil {
			a = &agg{}
		}
		a.by, a.rule = h.Options.LimitBy, keyRule(h.Options)
		byTask[name] = a
	}
	for task, a := range byTask {
		if seen[task] || a.rule.IsZero() {
			continue
		}
		g := GlobalLimitInfo{Scope: "task", Name: task, Rate: a.rule.Rate, Concurrency: a.rule.Concurrency,
			Running: a.running, Slots: a.running, By: a.by, Keys: a.keys}
		if a.rule.Rate > 0 {
			g.Per, g.Started = a.rule.Per.String(), a.strt
		}
		out = append(out, g)
	}
	return out
}
