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
	if by == "" {
		return nil
	}
	if globalRule(h.Options).IsZero() {
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

// limitBys returns, per task with a global limit and a LimitBy, its key.
func (c *Client) limitBys() map[string]string {
	var out map[string]string
	for name, h := range c.handlers {
		if h.Options.LimitBy != "" && !globalRule(h.Options).IsZero() {
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
	seen := make(map[string]bool)
	for i := range out {
		g := &out[i]
		if g.Scope != "task" {
			continue
		}
		seen[g.Name] = true
		by := ""
		if h, ok := c.handlers[g.Name]; ok {
			by = h.Options.LimitBy
		} else if a := byTask[g.Name]; a != nil {
			by = a.by
		}
		if by == "" {
			continue
		}
		g.By, g.Keys, g.Running, g.Started = by, 0, 0, 0
		if a := byTask[g.Name]; a != nil {
			g.Keys, g.Running = a.keys, a.running
			if g.Rate > 0 {
				g.Started = a.strt
			}
		}
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
