package queuemaxtype

import (
	"testing"
)

// TestGlobalLimitInfo_String: String names the limit, then its Usage,
// and a per-key limit says so.
func TestGlobalLimitInfo_String(t *testing.T) {
	for _, c := range []struct {
		g           GlobalLimitInfo
		usage, text string
	}{
		{GlobalLimitInfo{Scope: "task", Name: "shop.Charge", Concurrency: 2, Running: 2, Rate: 50, Per: "1s", Started: 37},
			"running 2/2, started 37/50 per 1s", "task shop.Charge: running 2/2, started 37/50 per 1s"},
		{GlobalLimitInfo{Scope: "task", Name: "t.K", Concurrency: 4, Running: 1, Slots: 3},
			"running 1/4, 3 slots held", "task t.K: running 1/4, 3 slots held"},
		{GlobalLimitInfo{Scope: "task", Name: "t.K", Concurrency: 1, Running: 1, By: "cust", Keys: 7},
			"running 1/1", "task t.K per cust (7 keys in use; the busiest): running 1/1"},
	} {
		if got := c.g.Usage(); got != c.usage {
			t.Errorf("Usage() = %q, want %q", got, c.usage)
		}
		if got := c.g.String(); got != c.text {
			t.Errorf("String() = %q, want %q", got, c.text)
		}
	}
}
