package queuemax

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"time"

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

// schemaCache holds the payload schemas the live workers published, for
// a client's enqueues of tasks it has no handler for; it reads the
// registry again at most every registryRefresh.
type schemaCache struct {
	at      time.Time // monotonic: when byTask was read
	byTask  map[string][]json.RawMessage
	reading bool
}

// publishedSchemas returns the schemas live workers published for task,
// reading the registry when the cached copy is older than one refresh
// interval. A registry that cannot be read means no check, never a
// refused enqueue.
func (c *Client) publishedSchemas(task string) []json.RawMessage {
	c.schemaMu.Lock()
	fresh := !c.schemas.at.IsZero() && time.Since(c.schemas.at) < c.registryRefresh()
	if fresh || c.schemas.reading {
		out := c.schemas.byTask[task]
		c.schemaMu.Unlock()
		return out
	}
	c.schemas.reading = true
	c.schemaMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	byTask := map[string][]json.RawMessage{}
	workers, err := c.Workers(ctx)
	for _, w := range workers {
		for name, s := range w.Schemas {
			if !slices.ContainsFunc(byTask[name], func(o json.RawMessage) bool { return bytes.Equal(o, s) }) {
				byTask[name] = append(byTask[name], s)
			}
		}
	}
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	c.schemas.reading = false
	if err == nil {
		c.schemas.at, c.schemas.byTask = time.Now(), byTask
	}
	return c.schemas.byTask[task]
}

// checkPublished checks raw against the schemas live workers published
// for task: it must fit one of them (several differ while a new version
// rolls out). No published schema means no check.
func (c *Client) checkPublished(task string, raw json.RawMessage) error {
	schemas := c.publishedSchemas(task)
	var first error
	for _, s := range schemas {
		err := CheckSchema(task, raw, s)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}
