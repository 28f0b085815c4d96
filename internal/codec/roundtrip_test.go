package codec

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

type rtPlain struct {
	N     int               `json:"n"`
	S     string            `json:"s"`
	F     float64           `json:"f,omitempty"`
	B     []byte            `json:"b"`
	L     []int             `json:"l"`
	A     [3]uint8          `json:"a"`
	M     map[string]int    `json:"m"`
	K     map[int64]string  `json:"k"`
	P     *int              `json:"p"`
	Inner rtInner           `json:"inner"`
	Ptrs  []*rtInner        `json:"ptrs"`
	Any   any               `json:"any"`
	At    time.Time         `json:"at"`
	AtP   *time.Time        `json:"at_p,omitzero"`
	Deep  map[string][]bool `json:"deep"`
	skip  int
}

type rtInner struct {
	X int8   `json:"x"`
	Y uint32 `json:"y,omitempty"`
}

type rtEmbedded struct {
	*RtExported
	rtTagged
	Z string
}

type RtExported struct {
	E int `json:"e"`
}

// rtEmbeddedPtr promotes fields through a pointer to an unexported
// struct, which encoding/json writes but cannot decode.
type rtEmbeddedPtr struct {
	*rtInner
	Z string
}

type rtTagged struct {
	T string `json:"t"`
}

type rtRecursive struct {
	Name     string         `json:"name"`
	Children []*rtRecursive `json:"children"`
}

// rtLiar writes keys its decode refuses.
type rtLiar struct {
	N int `json:"n"`
}

func (rtLiar) MarshalJSON() ([]byte, error) { return []byte(`{"other":1}`), nil }

type rtHasLiar struct {
	L rtLiar `json:"l"`
}

type rtQuoted struct {
	N int `json:"n,string"`
}

type rtStringer struct {
	S fmt.Stringer `json:"s"`
}

type rtTextKey struct {
	M map[rtKey]int `json:"m"`
}

type rtKey string

func (k rtKey) MarshalText() ([]byte, error) { return []byte("k-" + string(k)), nil }

type rtName string

func (n rtName) String() string { return string(n) }

func TestRoundTrips(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[rtPlain](), true},
		{reflect.TypeFor[*rtPlain](), true},
		{reflect.TypeFor[rtEmbedded](), true},
		{reflect.TypeFor[rtRecursive](), true},
		{reflect.TypeFor[map[string]any](), true},
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[rtLiar](), false},
		{reflect.TypeFor[rtEmbeddedPtr](), false},
		{reflect.TypeFor[rtHasLiar](), false},
		{reflect.TypeFor[[]rtHasLiar](), false},
		{reflect.TypeFor[rtQuoted](), false},
		{reflect.TypeFor[rtStringer](), false},
		{reflect.TypeFor[rtTextKey](), false},
		{reflect.TypeFor[json.RawMessage](), false},
		{reflect.TypeFor[struct{ C chan int }](), false},
		{reflect.TypeFor[map[float64]int](), false},
	} {
		if got := RoundTrips(c.t); got != c.want {
			t.Errorf("RoundTrips(%v) = %v, want %v", c.t, got, c.want)
		}
		if got := RoundTrips(c.t); got != c.want { // cached
			t.Errorf("RoundTrips(%v) again = %v, want %v", c.t, got, c.want)
		}
	}
}

// decodeBack decodes what Marshal wrote for v with Decode into v's type.
func decodeBack(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	ptr := reflect.New(reflect.TypeOf(v))
	return raw, Decode("t", raw, ptr.Elem(), ptr.Interface())
}

// What RoundTrips says of a type holds for its values: random values of
// the types it accepts decode back; the types it refuses for a reason
// have values that do not.
func TestRoundTrips_Values(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, v := range []any{rtPlain{}, rtInner{}, rtEmbedded{}, rtRecursive{}, rtTagged{}} {
		typ := reflect.TypeOf(v)
		if !RoundTrips(typ) {
			t.Fatalf("RoundTrips(%v) = false", typ)
		}
		for i := range 200 {
			rv := reflect.New(typ).Elem()
			fill(rv, r, 3)
			if raw, err := decodeBack(rv.Interface()); err != nil {
				t.Fatalf("%v value %d: %s: %v", typ, i, raw, err)
			}
		}
	}
	n := 7
	now := time.Now()
	filled := []any{
		rtPlain{N: 1, B: []byte{1, 2}, L: []int{}, M: map[string]int{"a": 1}, K: map[int64]string{-3: "x"}, P: &n,
			Ptrs: []*rtInner{nil, {X: -1}}, Any: map[string]any{"q": []any{1.5, "s", nil}}, At: now, AtP: &now,
			Deep: map[string][]bool{"d": nil}},
		rtEmbedded{RtExported: &RtExported{E: 2}, Z: "z"},
		rtRecursive{Name: "a", Children: []*rtRecursive{{Name: "b"}, nil}},
	}
	for _, v := range filled {
		if raw, err := decodeBack(v); err != nil {
			t.Fatalf("%T: %s: %v", v, raw, err)
		}
	}
	for _, v := range []any{rtHasLiar{}, rtStringer{S: rtName("x")}, rtEmbeddedPtr{rtInner: &rtInner{}}} {
		if RoundTrips(reflect.TypeOf(v)) {
			t.Fatalf("RoundTrips(%T) = true", v)
		}
		if raw, err := decodeBack(v); err == nil {
			t.Fatalf("%T: %s decoded back: the test shows nothing", v, raw)
		}
	}
}

// fill sets v (settable) to a random value, nil or empty by chance;
// unexported fields stay zero, depth bounds recursion.
func fill(v reflect.Value, r *rand.Rand, depth int) {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Unix(r.Int63n(1<<35), r.Int63n(1e9)).In(time.FixedZone("z", 3600*(r.Intn(25)-12)))))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(r.Int63() >> (r.Intn(64)) * int64(1-2*r.Intn(2)))
		if v.OverflowInt(v.Int()) {
			v.SetInt(int64(int8(v.Int())))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(r.Uint64() >> r.Intn(64))
		if v.OverflowUint(v.Uint()) {
			v.SetUint(uint64(uint8(v.Uint())))
		}
	case reflect.Float32, reflect.Float64:
		v.SetFloat(r.NormFloat64() * math.Pow(10, float64(r.Intn(40)-20)))
	case reflect.String:
		b := make([]byte, r.Intn(8))
		r.Read(b) // invalid UTF-8 too
		v.SetString(string(b))
	case reflect.Pointer:
		if depth > 0 && r.Intn(3) > 0 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), r, depth-1)
			v.Set(p)
		}
	case reflect.Slice:
		if r.Intn(4) == 0 || depth == 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), r.Intn(4), 4)
		for i := range s.Len() {
			fill(s.Index(i), r, depth-1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), r, depth-1)
		}
	case reflect.Map:
		if r.Intn(4) == 0 || depth == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range r.Intn(4) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, r, 0)
			fill(e, r, depth-1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		if x := []any{1.5, "s", map[string]any{"k": []any{true, nil}}, nil}[r.Intn(4)]; x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), r, depth)
			}
		}
	}
}

func TestEncodedFrom(t *testing.T) {
	plain := reflect.TypeFor[rtPlain]()
	for _, c := range []struct {
		v    any
		t    reflect.Type
		want bool
	}{
		{rtPlain{}, plain, true},
		{&rtPlain{}, plain, false}, // another type than the decode's
		{rtInner{}, plain, false},
		{json.RawMessage(`{}`), plain, false},
		{map[string]any{}, plain, false},
		{rtPlain{}, nil, false},
		{rtHasLiar{}, reflect.TypeFor[rtHasLiar](), false},
	} {
		if got := EncodedFrom(c.v, c.t); got != c.want {
			t.Errorf("EncodedFrom(%T, %v) = %v, want %v", c.v, c.t, got, c.want)
		}
	}
}

func TestSameFunc(t *testing.T) {
	make := func(name string) func(json.RawMessage) error {
		return func(json.RawMessage) error { return fmt.Errorf("%s", name) }
	}
	a, b := make("a"), make("a")
	c := a
	if !SameFunc(a, c) {
		t.Error("a copy of a function value is not the same")
	}
	if SameFunc(a, b) {
		t.Error("two closures of one literal are the same")
	}
	if SameFunc(nil, nil) || SameFunc(a, nil) {
		t.Error("nil is the same")
	}
}
