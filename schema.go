package queuemax

import (
	"encoding/json"
	"reflect"

	"github.com/queuemax/queuemax/internal/codec"
)

// PayloadSchema returns the JSON Schema (draft 2020-12) of the payloads
// DecodeArgs accepts for type t, as far as a schema can say it: the keys
// of each object (additionalProperties false), the required ones, the JSON
// type of each value, and the element count of arrays. A type with its own
// UnmarshalJSON is any value ({}), one with its own UnmarshalText a string.
// Run publishes the schema of every Define and DefineResult task in its
// worker registry entry (WorkerInfo.Schemas), and a client that has no
// handler of a task checks payloads against it (see Client.Enqueue).
func PayloadSchema(t reflect.Type) json.RawMessage { return codec.PayloadSchema(t) }

// CheckSchema checks a raw payload of task against a schema from
// PayloadSchema (the keywords type, properties, required,
// additionalProperties, items, minItems, maxItems, minimum, maximum,
// anyOf and not; others are ignored). Errors are *PayloadShapeError.
func CheckSchema(task string, raw json.RawMessage, schema json.RawMessage) error {
	return codec.CheckSchema(task, raw, schema)
}
