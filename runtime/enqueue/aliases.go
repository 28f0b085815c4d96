package enqueue

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CheckAliases rejects an alias (aliases maps each handler's name to its
// TaskOptions.Aliases) that is empty, its own handler's name, or another
// handler's name or alias. The errors wrap invalid (the root's
// ErrInvalidConfig) or duplicate (ErrDuplicateTask).
func CheckAliases(aliases map[string][]string, invalid, duplicate error) error {
	seen := map[string]string{}
	for name := range aliases {
		seen[name] = name
	}
	for _, name := range slices.Sorted(maps.Keys(aliases)) {
		for _, a := range aliases[name] {
			if a == "" || a == name {
				return fmt.Errorf("%w: handler %q: alias %q must be a different, non-empty name", invalid, name, a)
			}
			if other, dup := seen[a]; dup {
				return fmt.Errorf("%w: %q is both an alias of %q and %q", duplicate, a, name, other)
			}
			seen[a] = name
		}
	}
	return nil
}

// Renames knows the earlier names of a client's tasks: their declared
// aliases, and the name an earlier version derived from the import path
// (example.com/shop/tasks.SendEmail for tasks.SendEmail). It is the one
// rule for both users of an earlier name: an enqueue under one stores the
// task's name (Names.Resolve), and the engine's maintenance gives the
// waiting jobs stored under one the task's name (engine.Adopt).
type Renames struct {
	own     map[string]bool   // the tasks' own names
	aliases map[string]string // alias → task
}

// NewRenames returns the earlier names of tasks (name → its aliases); ""
// is a catch-all handler, whose aliases are ignored.
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

// Of returns the task whose earlier name stored is: one of its aliases,
// or an import-path form of its name (a task's name before its package
// moved). ok is false for a task's own name and for unknown names.
func (r *Renames) Of(stored string) (task string, ok bool) {
	if r == nil || stored == "" || r.own[stored] {
		return "", false
	}
	if to, ok := r.aliases[stored]; ok {
		return to, true
	}
	if strings.Contains(stored, "/") {
		if short := pathlessTask(stored); short != "" && r.own[short] {
			return short, true
		}
	}
	return "", false
}
