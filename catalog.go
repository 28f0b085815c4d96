package queuemax

import (
	"context"
	"maps"
	"slices"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/enqueue"
)

// CatalogTask is one task of the store's task catalogue: what Run of some
// process published about a task it runs, kept after every worker
// stopped; see queuemaxtype.CatalogTask for its fields.
type CatalogTask = queuemaxtype.CatalogTask

// TaskCatalog returns the store's task catalogue, ordered by name.
func (c *Client) TaskCatalog(ctx context.Context) ([]CatalogTask, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return enqueue.ReadCatalog(ctx, c.st)
}

// PublishTasks writes c's handlers (all but a catch-all) into the store's
// task catalogue: their names, aliases, payload schemas and defaults. Run
// does it before it claims anything; a producer that has the handlers but
// runs no worker may call it so that clients without them (the queuemax
// CLI, an admin API) resolve the tasks' names before any worker ran.
func (c *Client) PublishTasks(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.cfg.ReadOnly {
		return ErrReadOnly
	}
	return c.publishCatalog(ctx)
}

// publishCatalog writes this client's named handlers into the store's task
// catalogue.
func (c *Client) publishCatalog(ctx context.Context) error {
	var tasks []CatalogTask
	for _, name := range slices.Sorted(maps.Keys(c.handlers)) {
		if name == "" {
			continue // a catch-all handler names no task
		}
		h := c.handlers[name]
		t := CatalogTask{Name: name, Aliases: h.Options.Aliases, Priority: h.Options.Priority, MaxRetries: h.Options.MaxRetries, Queue: h.Options.Queue}
		if h.args != nil {
			t.Schema = PayloadSchema(h.args)
		}
		tasks = append(tasks, t)
	}
	return enqueue.PublishCatalog(ctx, c.st, tasks, c.now())
}

// oldNameOf returns the handler whose earlier name stored is: a declared
// alias, or an import-path form of a handler's name (pkg/path/tasks.F for
// tasks.F). ok is false for a handler's own name and for unknown names.
// Run's maintenance renames the waiting jobs stored under such names
// (engine.Adopt), by the rule enqueues resolve names by (enqueue.Renames).
func (c *Client) oldNameOf(stored string) (string, bool) { return c.renames.Of(stored) }

// checkAliases rejects an alias that is another handler's name or alias.
func (c *Client) checkAliases() error {
	return enqueue.CheckAliases(c.aliases(), ErrInvalidConfig, ErrDuplicateTask)
}

// ResolveTaskName resolves a task name as an enqueue on c does: one of
// c's handlers (by name, alias or a short name that matches one), else
// a task of the store's task catalogue (the tasks workers ran, kept after
// they stop) in the same ways, so that it resolves the same way whatever
// is running. An ambiguous or unknown name is an ErrUnknownTask error
// listing the near matches.
func (c *Client) ResolveTaskName(ctx context.Context, name string) (string, error) {
	if c.closed.Load() {
		return "", ErrClosed
	}
	return c.taskNames.Resolve(ctx, name, false, false)
}

// newTaskNames builds the client's task-name resolution (see
// enqueue.Names): its handlers, then the store's task catalogue.
func (c *Client) newTaskNames() *enqueue.Names {
	return &enqueue.Names{Handlers: c.aliases(), Renames: c.renames, Claimed: c.names, AllowUnknown: c.cfg.AllowUnknownTasks, Refresh: c.registryRefresh(),
		Catalog: func(ctx context.Context) ([]enqueue.CatalogEntry, error) {
			tasks, err := c.TaskCatalog(ctx)
			out := make([]enqueue.CatalogEntry, len(tasks))
			for i, t := range tasks {
				out[i] = enqueue.CatalogEntry{Name: t.Name, Aliases: t.Aliases}
			}
			return out, err
		}}
}
