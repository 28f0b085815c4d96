package enqueue

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// badMarshaler returns invalid JSON from MarshalJSON.
type badMarshaler struct{}

func (badMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"a":`), nil }

// nested returns a value d levels deep: {"n":{"n":…{}}}.
func nested(d int) any {
	var v any = map[string]any{}
	for range d {
		v = map[string]any{"n": v}
	}
	return v
}

// EncodePayload does not scan json.Marshal's output for validity again;
// these are the cases that skip would let through if encoding/json did
// not check for itself, and the checks that still apply to its output.
func TestEncodePayloadOfValues(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string // in the error; empty: accepted
	}{
		{"a struct", struct{ N int }{1}, ""},
		{"invalid RawMessage field", struct{ R json.RawMessage }{json.RawMessage(`{"a":`)}, "not JSON-encodable"},
		{"invalid MarshalJSON", struct{ B badMarshaler }{}, "not JSON-encodable"},
		{"invalid MarshalJSON at the root", badMarshaler{}, "not JSON-encodable"},
		{"not an object", []int{1}, "must be a JSON object"},
		{"as deep as allowed", nested(MaxPayloadDepth), ""},
		{"too deep", nested(MaxPayloadDepth + 1), "nesting exceeds"},
		{"too large", map[string]string{"s": strings.Repeat("x", MaxPayloadBytes)}, "byte limit"},
		{"invalid raw JSON", json.RawMessage(`{"a":`), "not valid JSON"},
		{"invalid raw bytes", []byte(`{"a":}`), "not valid JSON"},
	} {
		_, err := EncodePayload(c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		case err != nil && !errors.As(err, new(*PayloadError)):
			t.Errorf("%s: error %T, want a *PayloadError", c.name, err)
		}
	}
}

// BenchmarkEncodePayload is the enqueue's encoding of one small typed
// payload (the bulk scenario's).
func BenchmarkEncodePayload(b *testing.B) {
	type args struct{ N int }
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := EncodePayload(args{N: i}); err != nil {
			b.Fatal(err)
		}
	}
}
