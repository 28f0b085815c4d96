package sqlitestore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// A plain row's literals (jobCol.plain) must be the values the general
// insert writes for a plain job, and its bound values the general
// insert's, in insertCols' order.
func TestPlainRowLiterals(t *testing.T) {
	j := store.InsertParams{Task: "mail", Payload: []byte(`{"a":1}`), Priority: 2, MaxAttempts: 4,
		RetryDelay: 3 * time.Second, Now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	if !plainJob(&j) {
		t.Fatal("the job is not plain")
	}
	v := rowVals{j: &j, shard: 3}
	var full, plain argRow
	v.putRow(&full, insertCols)
	v.putPlain(&plain)
	if len(full) != len(insertCols) {
		t.Fatalf("general row: %d values for %d columns", len(full), len(insertCols))
	}
	literal := func(x any) string {
		switch x := x.(type) {
		case nil:
			return "NULL"
		case int64:
			return strconv.FormatInt(x, 10)
		case string:
			return "'" + x + "'"
		}
		t.Fatalf("value %#v of type %T", x, x)
		return ""
	}
	k := 0
	for i, c := range insertCols {
		col := jobCols[c]
		if col.plain == "" {
			if k >= len(plain) || plain[k] != full[i] {
				t.Errorf("%s: plain row binds %v, general insert %v", col.name, plain[k:], full[i])
			}
			k++
			continue
		}
		if got := literal(full[i]); got != col.plain {
			t.Errorf("%s: plain literal %s, general insert writes %s", col.name, col.plain, got)
		}
	}
	if k != len(plain) {
		t.Errorf("plain row binds %d values, plainCols has %d", len(plain), k)
	}
	if n := strings.Count(plainRowsSQL(1), "?"); n != len(plainCols) {
		t.Errorf("plain insert has %d parameters, plainCols %d", n, len(plainCols))
	}
}

// Every column a read selects is one the scan target stores, in order, and
// a column a file lacks reads as NULL.
func TestJobColumnLists(t *testing.T) {
	full, claim := newJobScan(false), newJobScan(true)
	if n := len(strings.Split(jobColumns, ",")); n != len(full.dests) {
		t.Errorf("jobColumns has %d columns, the full scan %d", n, len(full.dests))
	}
	if n := len(strings.Split(claimColumns, ",")); n != len(claim.dests) {
		t.Errorf("claimColumns has %d columns, the claim scan %d", n, len(claim.dests))
	}
	have := map[string]bool{}
	for _, c := range strings.Split(jobColumns, ", ") {
		have[c] = c != "queue"
	}
	got := readColumnsOf(have)
	if want := strings.Replace(jobColumns, ", queue,", ", NULL AS queue,", 1); got != want {
		t.Errorf("readColumnsOf without queue:\n got %s\nwant %s", got, want)
	}
}
