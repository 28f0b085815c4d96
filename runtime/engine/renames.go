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
	_, err := Adopt(ctx, e.cfg.Renames, e.cfg.Store, e.log)
	if ctx.Err() != nil {
		return
	}
	e.Outage(ctx, "task renames", "queuemax: cannot rename jobs stored under earlier task names", err)
}
