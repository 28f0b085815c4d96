package queuemax

import (
	"context"
	"encoding/json"
	"reflect"
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

// schemaCache holds the payload schemas the live workers published, parsed,
// for a client's enqueues of tasks it has no handler for; it reads the
// registry again at most every registryRefresh, whether the last read
// worked or not (a failing registry must not cost a read per enqueue).
type schemaCache struct {
	at      time.Time // monotonic: when byTask was last read (or tried)
	byTask  map[string][]codec.Schema
	reading bool
}

// publishedSchemas returns the schemas live workers published for task,
// reading the registry when the cached copy is older than one refresh
// interval. A registry that cannot be read keeps the last copy; it never
// refuses an enqueue.
func (c *Client) publishedSchemas(task string) []codec.Schema {
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
	byTask := map[string][]codec.Schema{}
	seen := map[string]bool{}
	workers, err := c.Workers(ctx)
	for _, w := range workers {
		for name, raw := range w.Schemas {
			if key := name + "\x00" + string(raw); !seen[key] {
				seen[key] = true
				if s, perr := codec.ParseSchema(raw); perr == nil {
					byTask[name] = append(byTask[name], s)
				}
			}
		}
	}
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	c.schemas.reading = false
	c.schemas.at = time.Now()
	if err == nil {
		c.schemas.byTask = byTask
	}
	return c.schemas.byTask[task]
}

// checkPublished checks raw against the schemas live workers published
// for task: it must fit one of them (several differ while a new version
// rolls out). No published schema means no check.
func (c *Client) checkPublished(task string, raw json.RawMessage) error {
	var first error
	for _, s := range c.publishedSchemas(task) {
		err := s.Check(task, raw)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}
