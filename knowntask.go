package queuemax

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/queuemax/queuemax/internal/suggest"
)

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
	return "", false, fmt.Errorf("%w %q: ambiguous, it may mean %s", ErrUnknownTask, name, strings.Join(matches, ", "))
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
	return fmt.Errorf("%w %q%s; known tasks: %s", ErrUnknownTask, name, hint, list)
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

// resolveTask checks an enqueued task name. typed enqueues (through a
// generated handle) carry a generated full name and are kept, and so is
// every name on a client with a catch-all handler. Otherwise a name of
// one of c's handlers is kept; an alias of one, or an import-path form of
// one's name, becomes its name; a short name that matches one handler
// becomes its full name; then the same is tried against the store's task
// catalogue. Any other name is ErrUnknownTask listing the near matches,
// unless allowUnknown (Opts.AllowUnknownTask) or Config.AllowUnknownTasks
// is set. The empty name (a raw queue-max job) is kept on a client
// without handlers or with a DefaultHandler.
func (c *Client) resolveTask(ctx context.Context, name string, typed, allowUnknown bool) (string, error) {
	if typed {
		return name, nil
	}
	if _, ok := c.handlers[name]; ok {
		return name, nil
	}
	if _, ok := c.handlers[""]; ok {
		return name, nil
	}
	if name == "" && (len(c.handlers) == 0 || slices.Contains(c.names, "")) {
		return name, nil
	}
	if to, ok := c.oldNameOf(name); ok {
		return to, nil
	}
	if len(c.handlers) > 0 {
		full, ok, err := ResolveTask(c.names, name)
		if err != nil {
			return "", err
		}
		if ok {
			return full, nil
		}
	}
	if name != "" {
		cat, err := c.catalog(ctx, false)
		if err != nil && !allowUnknown && !c.cfg.AllowUnknownTasks {
			return "", err
		}
		full, ok, rerr := resolveCatalog(cat, name)
		if !ok && rerr == nil && err == nil {
			// A task a worker published since the last read.
			if cat, err = c.catalog(ctx, true); err == nil {
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
	if allowUnknown || c.cfg.AllowUnknownTasks {
		return name, nil
	}
	known := slices.Clone(c.names)
	if cat, err := c.catalog(ctx, false); err == nil {
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
