package enqueue

import "reflect"

// IsNil reports whether v, an application's transaction, is nil or a
// typed nil (a nil pointer in an interface).
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func:
		return rv.IsNil()
	}
	return false
}
