package queuemax

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fuzzArgs has a field of each kind the strict decoder treats apart.
type fuzzArgs struct {
	fuzzBase
	*fuzzAudit
	Name   string               `json:"name"`
	N      int8                 `json:"n"`
	F      float64              `json:"f,omitempty"`
	Q      uint16               `json:"q,string"`
	QS     *string              `json:"qs,string,omitempty"`
	At     time.Time            `json:"at,omitzero"`
	Addr   netip.Addr           `json:"addr,omitzero"`
	Raw    json.RawMessage      `json:"raw,omitempty"`
	Bytes  []byte               `json:"bytes,omitempty"`
	Items  []fuzzItem           `json:"items"`
	ByKey  map[string]*fuzzItem `json:"by_key,omitempty"`
	Fixed  [2]int               `json:"fixed"`
	Opt    *fuzzItem            `json:"opt"`
	Any    any                  `json:"any,omitempty"`
	Hidden string               `json:"-"`
}

type fuzzBase struct {
	ID int64 `json:"id"`
}

type fuzzAudit struct {
	By string `json:"by"`
}

type fuzzItem struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// FuzzDecodeArgs: DecodeArgs never panics, refuses with a
// *PayloadShapeError only, accepts only what encoding/json decodes (to the
// same value), and accepts its own output again, unchanged.
func FuzzDecodeArgs(f *testing.F) {
	f.Add([]byte(`{"id":1,"name":"a","n":-3,"q":"7","items":[],"fixed":[1,2],"opt":null}`))
	f.Add([]byte(`{"id":1,"by":"x","name":"a","n":1,"f":1.5,"q":"1","qs":"\"s\"","at":"2026-01-02T03:04:05Z","addr":"::1","raw":{"a":[1]},"bytes":"AQI=","items":[{"sku":"s","qty":2}],"by_key":{"k":null},"fixed":[0,0],"opt":{"sku":"","qty":0},"any":[1,"x"]}`))
	f.Add([]byte(`{"ID":1}`))
	f.Add([]byte(`{"id":1,"name":"a","n":300,"q":7,"items":null,"fixed":[1],"opt":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var a fuzzArgs
		err := DecodeArgs("t.F", raw, &a)
		if err != nil {
			var pe *PayloadShapeError
			if !errors.As(err, &pe) {
				t.Fatalf("DecodeArgs(%q) = %v, not a *PayloadShapeError", raw, err)
			}
			return
		}
		var loose fuzzArgs
		if err := json.Unmarshal(raw, &loose); err != nil {
			t.Fatalf("DecodeArgs accepted %q, which encoding/json refuses: %v", raw, err)
		}
		opts := cmp.Exporter(func(reflect.Type) bool { return true })
		if d := cmp.Diff(loose, a, opts); d != "" {
			t.Fatalf("DecodeArgs(%q) differs from encoding/json (-json +strict):\n%s", raw, d)
		}
		out, err := json.Marshal(a)
		if err != nil {
			return // a value encoding/json cannot write back (out-of-range time)
		}
		var again fuzzArgs
		if err := DecodeArgs("t.F", out, &again); err != nil {
			t.Fatalf("DecodeArgs refused its own encoding %s (of %q): %v", out, raw, err)
		}
		if d := cmp.Diff(a, again, opts); d != "" {
			t.Fatalf("%s decoded to another value (-first +again):\n%s", out, d)
		}
	})
}

// BenchmarkDecodeArgs measures the strict decode every typed enqueue and
// every job of a Define handler runs, against plain encoding/json.
func BenchmarkDecodeArgs(b *testing.B) {
	type args struct {
		To      string            `json:"to"`
		Subject string            `json:"subject"`
		N       int               `json:"n,omitempty"`
		Tags    []string          `json:"tags"`
		Meta    map[string]string `json:"meta,omitempty"`
	}
	raw, _ := json.Marshal(args{To: "a@example.com", Subject: "Hello", N: 3, Tags: []string{"x", "y"}, Meta: map[string]string{"k": "v"}})
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a args
			if err := DecodeArgs("t", raw, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a args
			if err := json.Unmarshal(raw, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
