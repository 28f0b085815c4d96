package queuemax

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/queuemax/queuemax/runtime/store"
)

// ErrInvalidLimit is wrapped by the errors of a bad global limit
// (TaskOptions.GlobalRateLimit, GlobalConcurrency, QueueLimits).
var ErrInvalidLimit = store.ErrInvalidLimit

// GlobalLimitInfo is one global limit and its current use, over every
// process on the same data directory or database (Stats.GlobalLimits).
type GlobalLimitInfo struct {
	// Scope is "task" or "queue"; Name the task's or the queue's name.
	Scope string `json:"scope"`
	Name  string `json:"name"`
	// Rate starts per Per (zero: no rate limit); Concurrency the most
	// jobs running at once (zero: no cap).
	Rate        int    `json:"rate,omitempty"`
	Per         string `json:"per,omitempty"`
	Concurrency int    `json:"concurrency,omitempty"`
	// Running is how many of the limit's jobs run now; Started how many
	// jobs started in the last Per. Slots is how many slots processes
	// hold now: a queue's cap without a rate lets a process keep slots
	// for its next jobs (prefetch), so Slots may exceed Running, and a
	// queue with no job running shows Running 0 whatever its slots.
	Running int `json:"running"`
	Started int `json:"started"`
	Slots   int `json:"slots"`
	// By is the payload key the limits apply per (TaskOptions.LimitBy);
	// then Keys is how many keys hold state now, and Running and Started
	// are the busiest key's.
	By   string `json:"by,omitempty"`
	Keys int    `json:"keys,omitempty"`
}

// String is the limit's use as the CLI prints it, e.g.
// "task shop.Charge: running 2/2, started 37/50 per 1s".
func (g GlobalLimitInfo) String() string {
	var parts []string
	if g.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("running %d/%d", g.Running, g.Concurrency))
		if g.Slots > g.Running {
			parts = append(parts, fmt.Sprintf("%d slots held", g.Slots))
		}
	}
	if g.Rate > 0 {
		parts = append(parts, fmt.Sprintf("started %d/%d per %s", g.Started, g.Rate, g.Per))
	}
	if g.By != "" {
		return fmt.Sprintf("%s %s per %s (%d keys in use; the busiest): %s", g.Scope, g.Name, g.By, g.Keys, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%s %s: %s", g.Scope, g.Name, strings.Join(parts, ", "))
}

// checkGlobalLimits validates a handler's global limits.
func checkGlobalLimits(h *Handler) error {
	o := h.Options
	if err := globalRule(o).Check(); err != nil {
		return fmt.Errorf("handler %q: global limit: %w", h.Name, err)
	}
	return checkLimitBy(h)
}

// globalRule is a task's global limits as the store takes them.
func globalRule(o TaskOptions) store.LimitRule {
	return store.LimitRule{Rate: o.GlobalRateLimit.Limit, Per: o.GlobalRateLimit.Per, Concurrency: o.GlobalConcurrency}
}

// globalRules returns the global limits of the client's handlers (nil if
// none has one).
func (c *Client) globalRules() map[string]store.LimitRule {
	var out map[string]store.LimitRule
	for name, h := range c.handlers {
		if r := globalRule(h.Options); !r.IsZero() {
			if out == nil {
				out = make(map[string]store.LimitRule)
			}
			out[name] = r
		}
	}
	return out
}

// globalLimits lists the global limits this client's handlers set, with
// their use from the store.
func (c *Client) globalLimits(ctx context.Context) ([]GlobalLimitInfo, error) {
	l := c.st
	now := c.now()
	usage, err := l.LimitUsage(ctx, now)
	if err != nil {
		return nil, err
	}
	used := make(map[string]store.LimitUsage, len(usage))
	for _, u := range usage {
		if u.Key == "" {
			used[u.Scope] = u
		}
	}
	var out []GlobalLimitInfo
	add := func(name string, r store.LimitRule, u store.LimitUsage) {
		g := GlobalLimitInfo{Scope: "task", Name: name, Rate: r.Rate, Concurrency: r.Concurrency, Running: u.Running, Started: u.Started,
			Slots: u.Running}
		if r.Rate > 0 {
			g.Per = r.Per.String()
		} else {
			g.Started = 0
		}
		out = append(out, g)
	}
	// This client's rules, then those other processes stored (a client
	// without handlers, such as the CLI's, sees the limits in use).
	rules := c.globalRules()
	for name, r := range rules {
		add(name, r, used[store.TaskScope(name)])
	}
	for _, u := range usage {
		name, ok := strings.CutPrefix(u.Scope, "task:")
		if _, mine := rules[name]; ok && u.Key == "" && !mine && !u.Rule.IsZero() {
			add(name, u.Rule, u)
		}
	}
	out = c.keyedLimitInfos(out, usage)
	qs, err := c.queueLimitInfos(ctx, usage) // limits_queue.go
	if err != nil {
		return nil, err
	}
	out = append(out, qs...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scope != out[j].Scope {
			return out[i].Scope > out[j].Scope // tasks first
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].By < out[j].By // a task's limit over all keys, then its per-key one
	})
	return out, nil
}

// GlobalLimits returns every global limit this client's handlers set,
// with its current use over every process.
func (c *Client) GlobalLimits(ctx context.Context) ([]GlobalLimitInfo, error) {
	return c.globalLimits(ctx)
}

// fillLimitHeld sets Held on the ready jobs among jobs whose task's global
// limit is reached, from the limits' stored state (one read for the whole
// listing; nothing is read when no job is ready). A reason already set
// (a breaker's) is kept.
func (c *Client) fillLimitHeld(ctx context.Context, jobs []*Job) {
	l := c.st
	ready := false
	for _, j := range jobs {
		ready = ready || j != nil && j.Status == StatusPending && j.Held == ""
	}
	if !ready {
		return
	}
	usage, err := l.LimitUsage(ctx, c.now())
	if err != nil || len(usage) == 0 {
		return
	}
	reasons := make(map[string]string, len(usage))
	for _, u := range usage {
		task, ok := strings.CutPrefix(u.Scope, "task:")
		if !ok || u.Key != "" {
			continue
		}
		reasons[task] = heldReason(task, u)
	}
	c.fillKeyedHeld(jobs, usage)
	for _, j := range jobs {
		if j != nil && j.Status == StatusPending && j.Held == "" {
			j.Held = reasons[j.Task]
		}
	}
	fillQueueHeld(usage, jobs) // limits_queue.go
}

// heldReason says which limit of task u reached, or "" if none is.
func heldReason(task string, u store.LimitUsage) string {
	r := u.Rule
	switch {
	case r.Concurrency > 0 && u.Running >= r.Concurrency:
		return fmt.Sprintf("global concurrency of task %s reached (%d/%d running)", task, u.Running, r.Concurrency)
	case r.Rate > 0 && u.Started >= r.Rate:
		return fmt.Sprintf("global rate limit of task %s reached (%d/%d started in the last %s)", task, u.Started, r.Rate, r.Per)
	}
	return ""
}
