package enqueue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuemax/queuemax/internal/suggest"
	"github.com/queuemax/queuemax/queuemaxtype"
)

// CatalogEntry is one task of the store's task catalogue, as name
// resolution needs it.
type CatalogEntry struct {
	Name    string
	Aliases []string
}

// Names resolves the task names of enqueues: against a client's handlers
// first (by name, alias, import-path form or a short name that matches
// one), then against the store's task catalogue in the same ways. Its
// fields are set once; it is safe for concurrent use.
type Names struct {
	// Handlers maps each handler's name to its aliases; "" is a catch-all
	// handler, which takes every name.
	Handlers map[string][]string
	// Renames are Handlers' earlier names, the engine's too; nil builds
	// them from Handlers.
	Renames *Renames
	// Claimed are the names the client claims (its handlers', "" for a
	// DefaultHandler; nil with a catch-all handler).
	Claimed []string
	// AllowUnknown keeps every name that resolves to no task
	// (Config.AllowUnknownTasks).
	AllowUnknown bool
	// Catalog reads the store's task catalogue; Refresh is how long a
	// read serves (a name it does not know reads it again).
	Catalog func(ctx context.Context) ([]CatalogEntry, error)
	Refresh time.Duration

	mu    sync.Mutex
	at    time.Time
	cache []CatalogEntry

	renamesOnce sync.Once
	renames     *Renames // Renames, or Handlers' (OldNameOf)
}

// Resolve checks an enqueued task name. typed enqueues (through a
// generated handle) carry a generated full name and are kept, and so is
// every name on a client with a catch-all handler. Otherwise a handler's
// name is kept; an alias of one, or an import-path form of one's name,
// becomes its name; a short name that matches one handler becomes its
// full name; then the same is tried against the task catalogue. Any other
// name is ErrUnknownTask listing the near matches, unless allowUnknown
// (Opts.AllowUnknownTask) or AllowUnknown is set. The empty name (a raw
// queue-max job) is kept on a client without handlers or with a
// DefaultHandler.
func (n *Names) Resolve(ctx context.Context, name string, typed, allowUnknown bool) (string, error) {
	if typed {
		return name, nil
	}
	if _, ok := n.Handlers[name]; ok {
		return name, nil
	}
	if _, ok := n.Handlers[""]; ok {
		return name, nil
	}
	if name == "" && (len(n.Handlers) == 0 || slices.Contains(n.Claimed, "")) {
		return name, nil
	}
	if to, ok := n.OldNameOf(name); ok {
		return to, nil
	}
	if len(n.Handlers) > 0 {
		full, ok, err := ResolveTask(n.Claimed, name)
		if err != nil {
			return "", err
		}
		if ok {
			return full, nil
		}
	}
	allowUnknown = allowUnknown || n.AllowUnknown
	if name != "" {
		cat, err := n.catalog(ctx, false)
		if err != nil && !allowUnknown {
			return "", err
		}
		full, ok, rerr := resolveCatalog(cat, name)
		if !ok && rerr == nil && err == nil {
			// A task a worker published since the last read.
			if cat, err = n.catalog(ctx, true); err == nil {
				full, ok, rerr = resolveCatalog(cat, name)
			}
		}
		switch {
		case rerr != nil:
			return "", rerr
		case ok:
			return full, nil
		}
	}
	if allowUnknown {
		return name, nil
	}
	known := slices.Clone(n.Claimed)
	if cat, err := n.catalog(ctx, false); err == nil {
		for _, t := range cat {
			if !slices.Contains(known, t.Name) {
				known = append(known, t.Name)
			}
		}
	}
	known = slices.DeleteFunc(known, func(s string) bool { return s == "" })
	err := UnknownTaskError(name, known)
	return "", fmt.Errorf("%w (Opts.AllowUnknownTask stores it anyway)", err)
}

// OldNameOf returns the handler that runs jobs stored under the task name
// stored, when that is one of its aliases or an import-path form of its
// name (a task's name before its package moved): Renames.Of over Handlers.
func (n *Names) OldNameOf(stored string) (string, bool) {
	n.renamesOnce.Do(func() {
		if n.renames = n.Renames; n.renames == nil {
			n.renames = NewRenames(n.Handlers)
		}
	})
	return n.renames.Of(stored)
}

// catalog returns the task catalogue, from the cache unless it is stale
// or fresh is set. A catalogue that cannot be read is an error.
func (n *Names) catalog(ctx context.Context, fresh bool) ([]CatalogEntry, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !fresh && !n.at.IsZero() && time.Since(n.at) < n.Refresh {
		return n.cache, nil
	}
	if n.Catalog == nil {
		return nil, nil
	}
	tasks, err := n.Catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("queuemax: read the task catalogue: %w", err)
	}
	n.cache, n.at = tasks, time.Now()
	return tasks, nil
}

// resolveCatalog resolves name against the catalogue: a task's name, one
// of its aliases, an import-path form of a task's name, or a short name
// that matches one task. ok is false when nothing matches; an ambiguous
// short name is an error listing the candidates.
func resolveCatalog(cat []CatalogEntry, name string) (full string, ok bool, err error) {
	names := make([]string, 0, len(cat))
	for _, t := range cat {
		if t.Name == name {
			return name, true, nil
		}
		if slices.Contains(t.Aliases, name) {
			return t.Name, true, nil
		}
		names = append(names, t.Name)
	}
	if strings.Contains(name, "/") {
		if short := pathlessTask(name); slices.Contains(names, short) {
			return short, true, nil
		}
	}
	return ResolveTask(names, name)
}

// ResolveTask maps a task name as a person writes it to the name of one of
// handlers: the full name, the name without its import path
// (tasks.SendEmail) or the bare function name (SendEmail). ok is false when
// no handler matches; a short name that matches several handlers is an
// ErrUnknownTask error listing them.
func ResolveTask(handlers []string, name string) (full string, ok bool, err error) {
	var matches []string
	for _, h := range handlers {
		switch {
		case h == name:
			return h, true, nil
		case name != "" && (pathlessTask(h) == name || bareTask(h) == name):
			matches = append(matches, h)
		}
	}
	switch len(matches) {
	case 0:
		return name, false, nil
	case 1:
		return matches[0], true, nil
	}
	slices.Sort(matches)
	return "", false, fmt.Errorf("%w %q: ambiguous, it may mean %s", queuemaxtype.ErrUnknownTask, name, strings.Join(matches, ", "))
}

// UnknownTaskError returns the ErrUnknownTask error for name, with the
// nearest of known (by full or short name) as a suggestion and the known
// names listed.
func UnknownTaskError(name string, known []string) error {
	known = slices.Sorted(slices.Values(known))
	var short []string
	for _, k := range known {
		short = append(short, pathlessTask(k), bareTask(k))
	}
	hint := ""
	if s := suggest.Closest(name, known); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	} else if s := suggest.Closest(name, short); s != "" {
		for _, k := range known {
			if pathlessTask(k) == s || bareTask(k) == s {
				hint = fmt.Sprintf(" (did you mean %q?)", k)
				break
			}
		}
	}
	list := strings.Join(known, ", ")
	if len(known) == 0 {
		list = "none"
	}
	return fmt.Errorf("%w %q%s; known tasks: %s", queuemaxtype.ErrUnknownTask, name, hint, list)
}

// pathlessTask returns a task name without its import path.
func pathlessTask(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// bareTask returns the part of a task name after its last dot.
func bareTask(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !strings.Contains(name[i:], "/") {
		return name[i+1:]
	}
	return name
}
