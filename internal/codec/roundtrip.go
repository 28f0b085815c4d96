package codec

import (
	"encoding/json"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// EncodedFrom reports whether Decode into t is bound to accept whatever
// encoding/json wrote for v: v's dynamic type is t itself, and
// RoundTrips(t). An enqueue whose payload it encoded from such a value
// need not decode it again to validate it.
func EncodedFrom(v any, t reflect.Type) bool {
	return t != nil && reflect.TypeOf(v) == t && RoundTrips(t)
}

// CheckUnless runs check on raw unless proven says it cannot fail (an
// enqueue's validation of a payload EncodedFrom a value of the check's
// own type).
func CheckUnless(proven bool, check func(json.RawMessage) error, raw json.RawMessage) error {
	if proven {
		return nil
	}
	return check(raw)
}

// RoundTrips reports whether Decode into t accepts every JSON that
// encoding/json's Marshal writes for a value of t (when Marshal succeeds):
// the keys it writes are t's own, it omits only optional ones, it writes
// null only where a nil is allowed, and each value has the JSON type its
// field wants. It is conservative: a type that decides its own JSON
// (MarshalJSON, MarshalText and their Unmarshal counterparts; time.Time
// aside, whose encoding its decoding accepts), a field tagged ,string, a
// non-empty interface, or a kind encoding/json cannot write is false.
func RoundTrips(t reflect.Type) bool {
	if v, ok := roundTrips.Load(t); ok {
		return v.(bool)
	}
	ok := roundTripsOf(t, map[reflect.Type]bool{})
	roundTrips.Store(t, ok)
	return ok
}

var roundTrips sync.Map // reflect.Type -> bool

var timeType = reflect.TypeFor[time.Time]()

// roundTripsOf is RoundTrips without the cache; a type met again inside
// itself (a recursive type) is taken as true there, its other parts
// decide.
func roundTripsOf(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem() // encoded as its element, or null
	}
	if t == timeType {
		return true
	}
	if seen[t] {
		return true
	}
	seen[t] = true
	if selfEncoding(t) || decodesItself(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array: // a pointer to a pointer
		return roundTripsOf(t.Elem(), seen)
	case reflect.Interface:
		return t.NumMethod() == 0 // Decode takes any JSON into an empty interface
	case reflect.Map:
		switch k := t.Key(); k.Kind() {
		case reflect.String,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if selfEncoding(k) || decodesItself(k) {
				return false
			}
		default:
			return false
		}
		return roundTripsOf(t.Elem(), seen)
	case reflect.Struct:
		for _, f := range shapeOfStruct(t).fields {
			if f.quoted || !roundTripsOf(f.typ, seen) {
				return false
			}
			for i := 1; i < len(f.index); i++ {
				// encoding/json writes a field promoted through a
				// pointer to an unexported struct, but cannot set it.
				if e := t.FieldByIndex(f.index[:i]); e.Type.Kind() == reflect.Pointer && !e.IsExported() {
					return false
				}
			}
		}
		return true
	}
	return false
}

// selfEncoding reports whether encoding/json hands a value of t to a
// method of it (MarshalJSON or MarshalText), on the value or its pointer.
func selfEncoding(t reflect.Type) bool {
	p := t
	if p.Kind() != reflect.Pointer {
		p = reflect.PointerTo(p)
	}
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

// SameFunc reports whether a and b are one function value (the same
// closure, not merely the same code): a Validate a Handler still holds
// as its constructor set it.
func SameFunc(a, b func(json.RawMessage) error) bool {
	return a != nil && b != nil && *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}
