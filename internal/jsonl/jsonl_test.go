package jsonl

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		lines      []int
		badLine    int
	}{
		{"Lines", "{\"payload\": {}}\n\n{\"task\": \"t\", \"payload\": {\"n\": 1}, \"pagina_id\": 7}\n", []int{1, 3}, 0},
		{"Array", "[\n  {\"payload\": {}},\n  {\"payload\": {}}\n]\n", []int{2, 3}, 0},
		{"UnknownKey", "{\"payload\": {}}\n{\"payload\": {}, \"prio\": 1}\n", nil, 2},
		{"MissingPayload", "{\"task\": \"t\"}\n", nil, 1},
		{"KeyAndPaginaID", "{\"payload\": {}, \"key\": 1, \"pagina_id\": 2}\n", nil, 1},
		{"ArrayBadElement", "[\n  {\"payload\": {}},\n  {\"task\": 3, \"payload\": {}}\n]", nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, lines, err := Parse([]byte(tc.data), 1<<20)
			if tc.badLine != 0 {
				le, ok := errors.AsType[*LineError](err)
				if !ok || le.Line != tc.badLine {
					t.Fatalf("Parse = %v; want a LineError at line %d", err, tc.badLine)
				}
				return
			}
			if err != nil || len(recs) != len(tc.lines) {
				t.Fatalf("Parse = %d records, %v; want %d", len(recs), err, len(tc.lines))
			}
			for i, l := range tc.lines {
				if lines[i] != l {
					t.Errorf("record %d at line %d, want %d", i, lines[i], l)
				}
			}
		})
	}
}
