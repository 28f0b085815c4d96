package queuemax_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
)

// randValue returns a random value of t that encoding/json can write,
// drawn from r: every kind the generator accepts, nil and empty and full
// slices and maps, nil and set pointers, the zero value often. omit says
// the value goes into an omitempty field, where encoding/json writes an
// empty slice or map as nothing (so it comes back nil): none is drawn.
// Fields tagged json:"-" and unexported fields stay zero.
func randValue(r *rand.Rand, t reflect.Type, omit bool, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	if depth > 4 || r.IntN(8) == 0 {
		return v // the zero value
	}
	switch t {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).UTC()))
		return v
	case reflect.TypeFor[netip.Addr]():
		var b [4]byte
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		a := netip.AddrFrom4(b)
		if r.IntN(2) == 0 {
			var b16 [16]byte
			for i := range b16 {
				b16[i] = byte(r.IntN(256))
			}
			a = netip.AddrFrom16(b16)
		}
		v.Set(reflect.ValueOf(a))
		return v
	case reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(json.RawMessage(fmt.Sprintf(`{"k":%d,"s":[true,null]}`, r.IntN(100)))))
		return v
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		v.SetInt(int64(r.Uint64()) >> (64 - bits))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(r.Uint64() >> (64 - t.Bits()))
	case reflect.Float32:
		v.SetFloat(float64(float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10)))))
	case reflect.Float64:
		v.SetFloat(r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20)))
	case reflect.String:
		v.SetString(randString(r))
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			return v
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(randValue(r, t.Elem(), false, depth+1))
		v.Set(p)
	case reflect.Slice:
		n := r.IntN(4)
		if n == 0 && (omit || r.IntN(2) == 0) {
			return v // nil
		}
		if omit && n == 0 {
			n = 1
		}
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			s.Index(i).Set(randValue(r, t.Elem(), false, depth+1))
		}
		v.Set(s)
	case reflect.Array:
		for i := range t.Len() {
			v.Index(i).Set(randValue(r, t.Elem(), false, depth+1))
		}
	case reflect.Map:
		n := r.IntN(4)
		if n == 0 && (omit || r.IntN(2) == 0) {
			return v
		}
		m := reflect.MakeMapWithSize(t, n)
		for range n {
			m.SetMapIndex(randValue(r, t.Key(), false, depth+1), randValue(r, t.Elem(), false, depth+1))
		}
		if m.Len() == 0 && omit {
			return v
		}
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			v.Field(i).Set(randValue(r, f.Type, strings.Contains(tag, ",omitempty"), depth+1))
		}
	default:
		panic("randValue: no JSON form for " + t.String())
	}
	return v
}

// randString returns a valid UTF-8 string with characters encoding/json
// escapes.
func randString(r *rand.Rand) string {
	const alphabet = "abcXYZ09 _-\"\\/<>&\n\t\u00e9\u2028\u4e16\U0001F600"
	runes := []rune(alphabet)
	n := r.IntN(12)
	var b strings.Builder
	for range n {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

// sameValue compares what a handler received with what was enqueued:
// exactly, unexported fields included, time.Time by its Equal method, and
// a nil json.RawMessage (which encoding/json writes as null) the same as
// the RawMessage("null") it reads back.
var sameValue = cmp.Options{
	cmp.Transformer("rawNull", func(r json.RawMessage) string {
		if r == nil {
			return "null"
		}
		return string(r)
	}),
	cmp.Exporter(func(reflect.Type) bool { return true }),
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
