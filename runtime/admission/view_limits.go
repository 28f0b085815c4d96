package admission

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Job is a stored job as listings show it.
type Job = queuemaxtype.Job

// LimitInfo is one limit and its use.
type LimitInfo = queuemaxtype.GlobalLimitInfo

// Infos lists the limits of rules (a client's tasks), those other
// processes stored (a client without handlers, such as the CLI's, sees
// the limits in use) and the queues' (queues: their stored rules;
// claimed: each queue's jobs processes claimed), with their use from
// usage (the store's state rows): tasks first, by name, a task's limit
// over all keys before its per-key one.
func Infos(rules Rules, usage []store.LimitUsage, queues map[string]store.LimitRule, claimed map[string]int) []LimitInfo {
	used := make(map[string]store.LimitUsage, len(usage))
	for _, u := range usage {
		if u.Key == "" {
			used[u.Scope] = u
		}
	}
	var out []LimitInfo
	add := func(name string, r store.LimitRule, u store.LimitUsage) {
		g := LimitInfo{Scope: "task", Name: name, Rate: r.Rate, Concurrency: r.Concurrency, Running: u.Running, Started: u.Started,
			Slots: u.Running}
		if r.Rate > 0 {
			g.Per = r.Per.String()
		} else {
			g.Started = 0
		}
		out = append(out, g)
	}
	global := rules.Global()
	for name, r := range global {
		add(name, r, used[store.TaskScope(name)])
	}
	for _, u := range usage {
		name, ok := strings.CutPrefix(u.Scope, "task:")
		if _, mine := global[name]; ok && u.Key == "" && !mine && !u.Rule.IsZero() {
			add(name, u.Rule, u)
		}
	}
	out = keyedInfos(rules, out, usage)
	for name, r := range queues {
		u := used[store.QueueScope(name)]
		g := LimitInfo{Scope: "queue", Name: name, Rate: max(r.Rate, 0), Concurrency: r.Concurrency,
			Running: min(u.Running, claimed[store.QueueOf(name)]), Slots: u.Running}
		if r.Rate > 0 {
			g.Per, g.Started = r.Per.String(), u.Started
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scope != out[j].Scope {
			return out[i].Scope > out[j].Scope // tasks first
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].By < out[j].By // a task's limit over all keys, then its per-key one
	})
	return out
}

// keyedInfos completes the task limits of out that apply per key (By,
// Keys, and the busiest key's use) and adds those of tasks limited per
// key that only other processes run, from usage.
func keyedInfos(rules Rules, out []LimitInfo, usage []store.LimitUsage) []LimitInfo {
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
		r, ok := rules[g.Name]
		if g.Scope != "task" || !ok || r.By == "" || !r.Key.IsZero() {
			continue
		}
		seen[g.Name] = true
		g.By, g.Keys, g.Running, g.Started, g.Slots = r.By, 0, 0, 0, 0
		if a := byTask[g.Name]; a != nil {
			g.Keys, g.Running, g.Slots = a.keys, a.running, a.running
			if g.Rate > 0 {
				g.Started = a.strt
			}
		}
	}
	// The per-key limits of this client's tasks with Key limits, then
	// those of tasks only other processes run.
	for name, r := range rules {
		if r.By == "" || r.Key.IsZero() {
			continue
		}
		a := byTask[name]
		if a == nil {
			a = &agg{}
		}
		a.by, a.rule = r.By, r.Key
		byTask[name] = a
	}
	for task, a := range byTask {
		if seen[task] || a.rule.IsZero() {
			continue
		}
		g := LimitInfo{Scope: "task", Name: task, Rate: a.rule.Rate, Concurrency: a.rule.Concurrency,
			Running: a.running, Slots: a.running, By: a.by, Keys: a.keys}
		if a.rule.Rate > 0 {
			g.Per, g.Started = a.rule.Per.String(), a.strt
		}
		out = append(out, g)
	}
	return out
}

// waiting reports whether j is pending and no reason was given yet.
func waiting(j *Job) bool { return j != nil && j.Status == queuemaxtype.StatusPending && j.Held == "" }

// LimitHeld sets Held, at now, on the pending jobs among jobs whose task's, key's
// or queue's limit is reached, from the limits' stored state (one read
// for the whole listing; nothing is read when no job waits). A reason
// already set (a breaker's) is kept. rules give the tasks' LimitBy; a
// task of no rule is matched by the key names its stored rows carry.
func LimitHeld(ctx context.Context, st store.Store, now time.Time, jobs []*Job, rules Rules) {
	if !slices.ContainsFunc(jobs, waiting) {
		return
	}
	usage, err := st.LimitUsage(ctx, now)
	if err != nil || len(usage) == 0 {
		return
	}
	reasons := make(map[string]string, len(usage))
	for _, u := range usage {
		if task, ok := strings.CutPrefix(u.Scope, "task:"); ok && u.Key == "" {
			reasons[task] = heldReason("task "+task, "", u)
		}
	}
	keyedHeld(jobs, usage, rules)
	for _, j := range jobs {
		if waiting(j) {
			j.Held = reasons[j.Task]
		}
	}
	queues := make(map[string]string)
	for _, u := range usage {
		if name, ok := strings.CutPrefix(u.Scope, "queue:"); ok && u.Key == "" {
			if why := heldReason("queue "+name, "", u); why != "" {
				queues[name] = why
			}
		}
	}
	for _, j := range jobs {
		if waiting(j) {
			j.Held = queues[store.QueueOf(j.Queue)]
		}
	}
}

// keyedHeld sets Held on the waiting jobs of tasks limited per key whose
// key's limit is reached, from usage (every state row).
func keyedHeld(jobs []*Job, usage []store.LimitUsage, rules Rules) {
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
		if !waiting(j) {
			continue
		}
		candidates := bys[j.Task]
		if r, ok := rules[j.Task]; ok && r.By != "" {
			candidates = map[string]bool{r.By: true}
		}
		for by := range candidates {
			v, ok := store.PayloadKey(j.Payload, by)
			key := store.LimitKey(by, v, !ok)
			if u, ok := rows[store.ScopeKey{Scope: store.TaskScope(j.Task), Key: key}]; ok {
				if why := heldReason("task "+j.Task, key, u); why != "" {
					j.Held = why
					break
				}
			}
		}
	}
}

// heldReason says which limit of what (e.g. "task shop.Charge") u
// reached, for key ("" for the whole task or queue), or "" if none is.
func heldReason(what, key string, u store.LimitUsage) string {
	if key != "" {
		key = " for " + key
	}
	r := u.Rule
	switch {
	case r.Concurrency > 0 && u.Running >= r.Concurrency:
		return fmt.Sprintf("global concurrency of %s reached%s (%d/%d running)", what, key, u.Running, r.Concurrency)
	case r.Rate > 0 && u.Started >= r.Rate:
		return fmt.Sprintf("global rate limit of %s reached%s (%d/%d started in the last %s)", what, key, u.Started, r.Rate, r.Per)
	}
	return ""
}
