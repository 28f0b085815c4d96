package pgstore

import (
	"strings"
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
)

// The insert statements take their input row's fields from insFields, in
// the order rowArgs and jobArrays pass them; every column an insert
// writes from u reads a field u has.
func TestInsertFields_MatchArgs(t *testing.T) {
	if n := len(rowArgs(store.InsertParams{})); n != len(insFields) {
		t.Errorf("rowArgs passes %d values; insFields has %d", n, len(insFields))
	}
	if n := len(jobArrays([]store.InsertParams{{}})); n != len(insFields) {
		t.Errorf("jobArrays passes %d arrays; insFields has %d", n, len(insFields))
	}
	fields := map[string]bool{}
	for _, f := range insFields {
		fields[f.name] = true
	}
	for _, c := range jobCols {
		for _, ref := range strings.Split(c.ins, "u.")[1:] {
			name := strings.FieldsFunc(ref, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z') })[0]
			if !fields[name] {
				t.Errorf("column %s is inserted as %q: u has no field %s", c.name, c.ins, name)
			}
		}
	}
	const want = "shard, partition_key, task, payload, status, priority, max_attempts, retry_delay, created_at, next_retry_at, metadata, timeout_ms, tags, queue"
	if cols, _ := insertSelect(nil); cols != want {
		t.Errorf("an insert writes the columns %s; want %s", cols, want)
	}
}
