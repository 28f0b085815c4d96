package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	keys := []string{"priority", "retries", "timeout", "retry_delay"}
	tests := []struct{ in, want string }{
		{"priorty", "priority"},
		{"retires", "retries"},
		{"timout", "timeout"},
		{"retry_dely", "retry_delay"},
		{"zzzzzz", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.in, keys); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"stats", "stast", 2}, {"same", "same", 0}}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
