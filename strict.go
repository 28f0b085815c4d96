package queuemax

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/queuemax/queuemax/internal/codec"
)

// PayloadShapeError says why a payload does not fit its task's parameters:
// an unknown key, a missing required parameter or a value of the wrong
// type, with the field's dotted path. It matches both ErrPayloadShape and
// ErrInvalidPayload.
type PayloadShapeError = codec.PayloadShapeError

// DecodeArgs decodes a task's raw JSON payload into *a, strictly, by one
// rule at every depth (the top-level payload, the structs inside it, the
// elements of its slices and the values of its maps):
//
//   - a value that encoding/json writes for an A always decodes, unchanged;
//   - a JSON object decoded into a struct may hold only the keys
//     encoding/json writes for that struct, matched exactly (case
//     included): an unknown key is refused;
//   - a key is required unless its field is a pointer, is tagged omitempty
//     or omitzero, or is promoted from an embedded struct pointer; a field
//     tagged json:"-" has no key;
//   - a value of the wrong JSON type is refused, and so is null except
//     where encoding/json writes it (pointers, slices, maps, interfaces);
//   - a type with its own UnmarshalJSON or UnmarshalText method (time.Time,
//     netip.Addr, json.RawMessage, decimal and UUID types) decides for
//     itself, and a `json:",string"` field must hold a JSON string.
//
// Errors are *PayloadShapeError naming the field by its dotted path
// ("inv.items[2].sku"). Define and DefineResult run every job through it,
// and every enqueue of their task validates the payload with it, so a
// payload is refused at enqueue exactly when the worker would refuse it.
// See docs/payloads.md.
func DecodeArgs[A any](task string, raw json.RawMessage, a *A) error {
	return codec.Decode(task, raw, reflect.ValueOf(a).Elem(), a)
}

// DecodePayload is DecodeArgs for a type known only at run time: v must
// be a non-nil pointer.
func DecodePayload(task string, raw json.RawMessage, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("queuemax: DecodePayload needs a non-nil pointer, got %T", v)
	}
	return codec.Decode(task, raw, rv.Elem(), v)
}
