package queuemax

import (
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

// resolveTask checks an enqueued task name against the client's handlers.
// A client without handlers, or with a catch-all handler, accepts every
// name as written. Otherwise a registered name is kept, a short name that
// matches one handler is replaced by its full name, and any other name is
// ErrUnknownTask unless Config.AllowUnknownTasks is set. typed enqueues
// (through a generated handle) carry a generated full name and are kept.
func (c *Client) resolveTask(name string, typed bool) (string, error) {
	if len(c.handlers) == 0 || typed {
		return name, nil
	}
	if _, ok := c.handlers[name]; ok {
		return name, nil
	}
	if _, ok := c.handlers[""]; ok {
		return name, nil
	}
	full, ok, err := ResolveTask(c.names, name)
	switch {
	case err != nil:
		return "", err
	case ok:
		return full, nil
	case c.cfg.AllowUnknownTasks:
		return name, nil
	}
	return "", UnknownTaskError(name, c.names)
}
