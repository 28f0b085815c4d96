package enqueue

import "testing"

// TestRenames_Of: a declared alias and an import-path form of a task's
// name are earlier names of it; a task's own name, the empty name and
// unknown names are not.
func TestRenames_Of(t *testing.T) {
	t.Parallel()
	r := NewRenames(map[string][]string{"tasks.Send": {"mail.Send"}, "tasks.Sum": nil, "": {"ignored"}})
	for _, c := range []struct {
		stored, want string
		ok           bool
	}{
		{"mail.Send", "tasks.Send", true},
		{"example.com/shop/tasks.Sum", "tasks.Sum", true},
		{"tasks.Sum", "", false},
		{"", "", false},
		{"ignored", "", false},
		{"example.com/shop/tasks.Other", "", false},
		{"example.com/shop/", "", false},
	} {
		if got, ok := r.Of(c.stored); got != c.want || ok != c.ok {
			t.Errorf("Of(%q) = %q, %v; want %q, %v", c.stored, got, ok, c.want, c.ok)
		}
	}
}
