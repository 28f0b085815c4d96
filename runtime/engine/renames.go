package engine

import (
	"context"
	"log/slog"
	"strings"

	"github.com/queuemax/queuemax/runtime/store"
)

// Renames knows the earlier names of a client's tasks: their declared
// aliases, and the name an earlier version derived from the import path
// (example.com/shop/tasks.SendEmail for tasks.SendEmail). The engine's
// maintenance gives the waiting jobs stored under one of them the task's
// name (Adopt), so that jobs an old producer still stores under the old
// name run too; enqueues resolve them the same way (Of).
type Renames struct {
	own     map[string]bool   // the tasks' own names
	aliases map[string]string // alias → task
}

// NewRenames returns the earlier names of tasks (name → its aliases).
func NewRenames(tasks map[string][]string) *Renames {
	r := &Renames{own: make(map[string]bool, len(tasks)), aliases: make(map[string]string)}
	for name, aliases := range tasks {
		r.own[name] = true
		if name == "" {
			continue
		}
		for _, a := range aliases {
			r.aliases[a] = name
		}
	}
	return r
}

// Of returns the task whose earlier name stored is. ok is false for a
// task's own name and for unknown names.
func (r *Renames) Of(stored string) (task string, ok bool) {
	if r == nil || stored == "" || r.own[stored] {
		return "", false
	}
	if to, ok := r.aliases[stored]; ok {
		return to, true
	}
	if i := strings.LastIndexByte(stored, '/'); i >= 0 {
		if short := stored[i+1:]; short != "" && r.own[short] {
			return short, true
		}
	}
	return "", false
}

// Adopt renames the waiting jobs stored under an earlier name of a task
// to the task's name, and returns how many it renamed.
func (r *Renames) Adopt(ctx context.Context, st store.Store, log *slog.Logger) (int64, error) {
	if r == nil {
		return 0, nil
	}
	backlog, err := st.TaskBacklog(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for stored := range backlog {
		to, ok := r.Of(stored)
		if !ok {
			continue
		}
		n, err := st.TaskRename(ctx, stored, to)
		total += n
		if err != nil {
			return total, err
		}
		if n > 0 {
			log.InfoContext(ctx, "queuemax: jobs stored under an earlier task name now run as the task", "from", stored, "to", to, "jobs", n)
		}
	}
	return total, nil
}

// adoptRenamed runs Config.Renames' Adopt; the outage log reports a
// failure once per outage, and its recovery.
func (e *Engine) adoptRenamed(ctx context.Context) {
	if e.cfg.Renames == nil {
		return
	}
	_, err := e.cfg.Renames.Adopt(ctx, e.cfg.Store, e.log)
	if ctx.Err() != nil {
		return
	}
	e.Outage(ctx, "task renames", "queuemax: cannot rename jobs stored under earlier task names", err)
}
