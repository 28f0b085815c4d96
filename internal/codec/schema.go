package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PayloadSchema returns the JSON Schema (draft 2020-12) of the payloads
// DecodeArgs accepts for type t, as far as a schema can say it: the keys
// of each object (additionalProperties false), the required ones, the JSON
// type of each value, and the element count of arrays. A type with its own
// UnmarshalJSON is any value ({}), one with its own UnmarshalText a string.
func PayloadSchema(t reflect.Type) json.RawMessage {
	b, err := json.Marshal(schemaOf(t, map[reflect.Type]bool{}))
	if err != nil {
		panic(err) // maps of strings, numbers and bools only
	}
	return b
}

func schemaOf(t reflect.Type, stack map[reflect.Type]bool) map[string]any {
	if t == reflect.TypeFor[time.Time]() {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if decodesItself(t) {
		if p := reflect.PointerTo(t); t.Kind() != reflect.Pointer && !p.Implements(jsonUnmarshaler) {
			return map[string]any{"type": "string"}
		}
		return map[string]any{}
	}
	nullable := func(s map[string]any) map[string]any {
		if typ, ok := s["type"].(string); ok {
			s["type"] = []any{typ, "null"}
			return s
		}
		if len(s) == 0 {
			return s
		}
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(schemaOf(t.Elem(), stack))
	case reflect.Interface:
		return map[string]any{}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s := map[string]any{"type": "integer"}
		if t.Bits() < 64 {
			s["minimum"], s["maximum"] = -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1
		}
		return s
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s := map[string]any{"type": "integer", "minimum": 0}
		if t.Bits() < 64 {
			s["maximum"] = uint64(1)<<t.Bits() - 1
		}
		return s
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			pe := reflect.PointerTo(t.Elem())
			if !pe.Implements(jsonMarshaler) && !pe.Implements(textMarshaler) {
				return map[string]any{"type": []any{"string", "null"}, "contentEncoding": "base64"}
			}
		}
		return nullable(map[string]any{"type": "array", "items": schemaOf(t.Elem(), stack)})
	case reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), stack), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return nullable(map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), stack)})
	case reflect.Struct:
		if stack[t] {
			return map[string]any{} // a recursive type: not described further
		}
		stack[t] = true
		defer delete(stack, t)
		props := map[string]any{}
		required := []any{}
		for _, f := range shapeOfStruct(t).fields {
			var s map[string]any
			if f.quoted {
				s = map[string]any{"type": "string"}
				if f.typ.Kind() == reflect.Pointer {
					s = nullable(s)
				}
			} else {
				s = schemaOf(f.typ, stack)
			}
			props[f.key] = s
			if f.required {
				required = append(required, f.key)
			}
		}
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	}
	return map[string]any{"not": map[string]any{}} // no JSON form
}

// CheckSchema checks a raw payload of task against a schema from
// PayloadSchema (the keywords type, properties, required,
// additionalProperties, items, minItems, maxItems, minimum, maximum,
// anyOf and not; others are ignored). Errors are *PayloadShapeError.
func CheckSchema(task string, raw json.RawMessage, schema json.RawMessage) error {
	s, err := ParseSchema(schema)
	if err != nil {
		return fmt.Errorf("queuemax: payload schema of task %s: %w", task, err)
	}
	return s.Check(task, raw)
}

// Schema is a parsed payload schema, for checking many payloads against
// one schema without parsing it each time.
type Schema struct{ s any }

// ParseSchema parses a schema from PayloadSchema.
func ParseSchema(schema json.RawMessage) (Schema, error) {
	var s any
	err := json.Unmarshal(schema, &s)
	return Schema{s}, err
}

// Check is CheckSchema against the parsed schema.
func (s Schema) Check(task string, raw json.RawMessage) error {
	return checkSchema(task, bytes.TrimSpace(raw), s.s, "")
}

func checkSchema(task string, raw []byte, schema any, path string) error {
	s, ok := schema.(map[string]any)
	if !ok {
		if b, isBool := schema.(bool); isBool && !b {
			return &PayloadShapeError{Task: task, Field: path, Reason: "no value is allowed here"}
		}
		return nil
	}
	got := jsonType(raw)
	if got == "number" && isInteger(raw) {
		got = "integer"
	}
	if typ, ok := s["type"]; ok {
		var want []string
		switch v := typ.(type) {
		case string:
			want = []string{v}
		case []any:
			for _, w := range v {
				if w, ok := w.(string); ok {
					want = append(want, w)
				}
			}
		}
		if !slices.Contains(want, got) && !(got == "integer" && slices.Contains(want, "number")) {
			return &PayloadShapeError{Task: task, Field: path, Reason: fmt.Sprintf("want JSON %s, got JSON %s", joinOr(want), jsonType(raw))}
		}
	}
	if _, ok := s["not"]; ok && len(s) == 1 {
		return &PayloadShapeError{Task: task, Field: path, Reason: "no JSON value fits this field"}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var first error
		for _, alt := range alts {
			err := checkSchema(task, raw, alt, path)
			if err == nil {
				first = nil
				break
			}
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
	}
	switch got {
	case "integer", "number":
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			f = math.Inf(1)
		}
		if lo, ok := s["minimum"].(float64); ok && f < lo {
			return &PayloadShapeError{Task: task, Field: path, Reason: fmt.Sprintf("%s is below the minimum %v", raw, lo)}
		}
		if hi, ok := s["maximum"].(float64); ok && f > hi {
			return &PayloadShapeError{Task: task, Field: path, Reason: fmt.Sprintf("%s is above the maximum %v", raw, hi)}
		}
	case "array":
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return shapeErr(task, path, err)
		}
		if lo, ok := s["minItems"].(float64); ok && float64(len(elems)) < lo {
			return &PayloadShapeError{Task: task, Field: path, Reason: fmt.Sprintf("want at least %v elements, got %d", lo, len(elems))}
		}
		if hi, ok := s["maxItems"].(float64); ok && float64(len(elems)) > hi {
			return &PayloadShapeError{Task: task, Field: path, Reason: fmt.Sprintf("want at most %v elements, got %d", hi, len(elems))}
		}
		if items, ok := s["items"]; ok {
			for i, e := range elems {
				if err := checkSchema(task, bytes.TrimSpace(e), items, path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	case "object":
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return shapeErr(task, path, err)
		}
		props, _ := s["properties"].(map[string]any)
		keys := slices.Sorted(maps.Keys(props))
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if _, known := props[k]; known {
				continue
			}
			if extra, ok := s["additionalProperties"]; ok {
				if b, isBool := extra.(bool); isBool && !b {
					reason := "unknown field"
					if len(keys) > 0 {
						reason += " (want " + quoteList(keys) + ")"
					}
					return &PayloadShapeError{Task: task, Field: joinPath(path, k), Reason: reason}
				}
			}
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if k, ok := r.(string); ok {
					if _, present := obj[k]; !present {
						return &PayloadShapeError{Task: task, Field: joinPath(path, k), Reason: "missing (required by the task's published schema)"}
					}
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			sub, known := props[k]
			if !known {
				sub = s["additionalProperties"]
			}
			if err := checkSchema(task, bytes.TrimSpace(obj[k]), sub, joinPath(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func isInteger(raw []byte) bool { return !bytes.ContainsAny(raw, ".eE") }

func joinOr(ss []string) string {
	switch len(ss) {
	case 0:
		return "nothing"
	case 1:
		return ss[0]
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " or " + ss[len(ss)-1]
}
