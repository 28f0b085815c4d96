package engine

import (
	"context"
	"log/slog"

	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// Adopt renames the waiting jobs stored under an earlier name of a task
// (r.Of, the rule enqueues resolve names by) to the task's name, and
// returns how many it renamed.
func Adopt(ctx context.Context, r *enqueue.Renames, st store.Store, log *slog.Logger) (int64, error) {
	if r == nil {
		return 0, nil
	}
	backlog, err := st.TaskBacklog(ctx)
	if err != nil {
		return 0, err
	}
	return adoptFrom(ctx, r, st, log, backlog)
}

// adoptFrom is Adopt over backlog, the store's TaskBacklog.
func adoptFrom(ctx context.Context, r *enqueue.Renames, st store.Store, log *slog.Logger, backlog map[string]store.TaskBacklog) (int64, error) {
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

// tasks adopts the jobs stored under the tasks' earlier names
// (Config.Renames) and warns of tasks with pending jobs no live worker
// runs (Config.Registry), from one read of the task backlog, which scans
// every waiting job: Run does it before its first claim, maintenance
// every RecoveryInterval (its first round, at Run's start, leaves it to
// Run). The outage log reports a renaming failure once per outage, and
// its recovery.
func (e *Engine) tasks(ctx context.Context) {
	r := e.cfg.Registry
	if r != nil && len(r.Info.Tasks) == 0 {
		r = nil // a catch-all runs every task: nothing to warn of
	}
	if e.cfg.Renames == nil && r == nil {
		return
	}
	backlog, err := e.cfg.Store.TaskBacklog(ctx)
	if err == nil && e.cfg.Renames != nil {
		var n int64
		n, err = adoptFrom(ctx, e.cfg.Renames, e.cfg.Store, e.log, backlog)
		if n > 0 && err == nil && r != nil {
			backlog, err = e.cfg.Store.TaskBacklog(ctx) // the renamed jobs' tasks changed
		}
	}
	if ctx.Err() != nil {
		return
	}
	if e.cfg.Renames != nil {
		e.Outage(ctx, "task renames", "queuemax: cannot rename jobs stored under earlier task names", err)
	}
	if err == nil && r != nil {
		r.warnUnhandled(ctx, backlog)
	}
}
