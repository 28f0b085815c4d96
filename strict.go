package queuemax

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/queuemax/queuemax/internal/suggest"
)

// PayloadShapeError says why a payload does not fit its task's parameters:
// an unknown key, a missing required parameter or a value of the wrong
// type. It matches both ErrPayloadShape and ErrInvalidPayload.
type PayloadShapeError struct {
	Task   string // the task name
	Field  string // the payload key (a dotted path inside a parameter, if known); empty for the payload as a whole
	Reason string
}

func (e *PayloadShapeError) Error() string {
	var b strings.Builder
	b.WriteString("queuemax: payload of task ")
	b.WriteString(e.Task)
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrPayloadShape and ErrInvalidPayload.
func (e *PayloadShapeError) Unwrap() []error { return []error{ErrPayloadShape, ErrInvalidPayload} }

// argField is one parameter of a task's payload struct.
type argField struct {
	key      string
	index    int
	required bool // not a pointer
	nullable bool // pointer, slice, map or interface: JSON null is its zero value
}

type argShape struct {
	isStruct bool
	fields   []argField
	keys     []string
}

var argShapes sync.Map // reflect.Type -> *argShape

// shapeOf describes the payload struct t: one key per exported field, named
// by its json tag (or the field name), as the generator emits them. A
// struct with embedded fields is decoded by encoding/json alone (unknown
// keys still refused, but no required-key check).
func shapeOf(t reflect.Type) *argShape {
	if s, ok := argShapes.Load(t); ok {
		return s.(*argShape)
	}
	s := &argShape{}
	if t.Kind() == reflect.Struct {
		s.isStruct = true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				// Promoted fields: leave key matching to encoding/json.
				return storeShape(t, &argShape{})
			}
			if !f.IsExported() {
				continue
			}
			key := f.Name
			if tag, ok := f.Tag.Lookup("json"); ok {
				name, _, _ := strings.Cut(tag, ",")
				if name == "-" {
					continue
				}
				if name != "" {
					key = name
				}
			}
			k := f.Type.Kind()
			s.fields = append(s.fields, argField{
				key:      key,
				index:    i,
				required: k != reflect.Pointer,
				nullable: k == reflect.Pointer || k == reflect.Slice || k == reflect.Map || k == reflect.Interface,
			})
			s.keys = append(s.keys, key)
		}
	}
	return storeShape(t, s)
}

func storeShape(t reflect.Type, s *argShape) *argShape {
	v, _ := argShapes.LoadOrStore(t, s)
	return v.(*argShape)
}

// DecodeArgs decodes a task's raw JSON payload into *a strictly: every key
// must name a parameter (exactly, case included), every parameter must be
// present except pointer parameters (which may be omitted or null), null is
// accepted only for pointers, slices, maps and interfaces, and values of the
// wrong type, including unknown keys inside struct parameters, are refused.
// Errors are *PayloadShapeError naming the field. Define and DefineResult
// use it to run jobs and to validate payloads at enqueue time.
func DecodeArgs[A any](task string, raw json.RawMessage, a *A) error {
	rv := reflect.ValueOf(a).Elem()
	shape := shapeOf(rv.Type())
	if !shape.isStruct {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(a); err != nil {
			return shapeErr(task, "", err)
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return &PayloadShapeError{Task: task, Reason: "want a JSON object: " + err.Error()}
	}
	if obj == nil {
		return &PayloadShapeError{Task: task, Reason: "want a JSON object, got null"}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(shape.keys, k) {
			reason := "unknown field"
			if s := suggest.Closest(k, shape.keys); s != "" {
				reason += fmt.Sprintf(" (did you mean %q?)", s)
			} else if len(shape.keys) > 0 {
				reason += " (want " + quoteList(shape.keys) + ")"
			} else {
				reason += " (the task takes no parameters)"
			}
			return &PayloadShapeError{Task: task, Field: k, Reason: reason}
		}
	}
	for _, f := range shape.fields {
		v, ok := obj[f.key]
		if !ok {
			if f.required {
				return &PayloadShapeError{Task: task, Field: f.key, Reason: "missing (every non-pointer parameter is required)"}
			}
			continue
		}
		if string(bytes.TrimSpace(v)) == "null" {
			if !f.nullable {
				return &PayloadShapeError{Task: task, Field: f.key, Reason: "null is not a " + rv.Field(f.index).Type().String()}
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(rv.Field(f.index).Addr().Interface()); err != nil {
			return shapeErr(task, f.key, err)
		}
	}
	return nil
}

// shapeErr turns a decoding error of field into a *PayloadShapeError.
func shapeErr(task, field string, err error) error {
	join := func(a, b string) string {
		switch {
		case a == "":
			return b
		case b == "":
			return a
		}
		return a + "." + b
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &PayloadShapeError{Task: task, Field: join(field, te.Field),
			Reason: fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &PayloadShapeError{Task: task, Field: join(field, strings.Trim(rest, `"`)), Reason: "unknown field"}
	}
	return &PayloadShapeError{Task: task, Field: field, Reason: strings.TrimPrefix(msg, "json: ")}
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
