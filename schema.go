package queuemax

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/queuemax/queuemax/internal/codec"
	"github.com/queuemax/queuemax/runtime/enqueue"
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

// newSchemas builds the check of payloads of tasks this client has no
// handler of, against the schemas live workers publish (see
// enqueue.Schemas).
func (c *Client) newSchemas() *enqueue.Schemas {
	return &enqueue.Schemas{Refresh: c.registryRefresh(), Read: func(ctx context.Context) ([]map[string]json.RawMessage, error) {
		ws, err := c.Workers(ctx)
		out := make([]map[string]json.RawMessage, len(ws))
		for i, w := range ws {
			out[i] = w.Schemas
		}
		return out, err
	}}
}
