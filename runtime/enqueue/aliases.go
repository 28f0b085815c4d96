package enqueue

import (
	"fmt"
	"maps"
	"slices"
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
