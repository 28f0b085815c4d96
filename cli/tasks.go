package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/queuemax/queuemax"
)

// resolveTask maps a task name given on the command line to a registered
// handler name: the full name, the name without its import path
// (tasks.SendEmail) or the bare function name (SendEmail). ok is false if
// no handler matches; an ambiguous short name is an error.
func resolveTask(handlers []queuemax.Handler, name string) (full string, ok bool, err error) {
	var matches []string
	for _, h := range handlers {
		switch {
		case h.Name == name:
			return h.Name, true, nil
		case shortTask(h.Name) == name || bareTask(h.Name) == name:
			matches = append(matches, h.Name)
		}
	}
	switch len(matches) {
	case 0:
		return name, false, nil
	case 1:
		return matches[0], true, nil
	}
	return "", false, usagef("task %q is ambiguous: %s", name, strings.Join(matches, ", "))
}

// bareTask returns the part of a task name after its last dot.
func bareTask(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && !strings.Contains(name[i:], "/") {
		return name[i+1:]
	}
	return name
}

// taskNames lists the short names of handlers, sorted.
func taskNames(handlers []queuemax.Handler) []string {
	names := make([]string, len(handlers))
	for i, h := range handlers {
		names[i] = shortTask(h.Name)
	}
	slices.Sort(names)
	return names
}

// requireTask resolves name and, when the binary has handlers, rejects
// names that match none.
func (r *runner) requireTask(name string) (string, error) {
	full, ok, err := resolveTask(r.handlers, name)
	if err != nil {
		return "", err
	}
	if !ok && len(r.handlers) > 0 {
		return "", usagef("unknown task %q (this binary runs: %s)", name, strings.Join(taskNames(r.handlers), ", "))
	}
	return full, nil
}

// filterTask resolves a --task filter: a registered name if one matches,
// otherwise the name as given (the data dir may hold other binaries'
// tasks).
func (r *runner) filterTask(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	full, _, err := resolveTask(r.handlers, name)
	return full, err
}

// describeSchedule returns a handler's schedule as the scheduler stores it.
func describeSchedule(p *queuemax.Periodic) string {
	if p.Every > 0 {
		return fmt.Sprintf("@every %s", p.Every)
	}
	return p.Cron
}
