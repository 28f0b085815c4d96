package codec

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/queuemax/queuemax/internal/suggest"
)

// ErrInvalidPayload and ErrPayloadShape are the root package's sentinels
// of the same names (queuemax.ErrInvalidPayload, queuemax.ErrPayloadShape).
var (
	ErrInvalidPayload = errors.New("queuemax: invalid payload")
	ErrPayloadShape   = errors.New("queuemax: payload does not fit the task's parameters")
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

// Decode decodes raw into ptr (rv is ptr's element) by the one rule of
// queuemax.DecodeArgs; the root package's DecodeArgs and DecodePayload are
// its entry points.
func Decode(task string, raw json.RawMessage, rv reflect.Value, ptr any) error {
	if t := rv.Type(); t.Kind() == reflect.Struct && !decodesItself(t) && len(shapeOfStruct(t).keys) == 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil && len(obj) > 0 {
			k := slices.Sorted(maps.Keys(obj))[0]
			return &PayloadShapeError{Task: task, Field: k, Reason: "unknown field (the task takes no parameters)"}
		}
	}
	if err := checkValue(task, raw, rv.Type(), ""); err != nil {
		return err
	}
	// checkValue has refused unknown keys (what a Decoder's
	// DisallowUnknownFields would), so plain Unmarshal decodes: no
	// Decoder, no copy of raw into its buffer (most of an enqueue's
	// validation cost in a batch).
	if err := json.Unmarshal(raw, ptr); err != nil {
		return shapeErr(task, "", err)
	}
	return nil
}

// jsonField is one key encoding/json reads and writes for a struct type,
// found by the same rules (see typeFields).
type jsonField struct {
	key       string
	index     []int
	typ       reflect.Type // the field's declared type
	tagged    bool
	quoted    bool // `,string` applies
	required  bool
	container int // container(typ)
	pos       int // index in structShape.fields
}

type structShape struct {
	fields []jsonField
	byKey  map[string]*jsonField
	keys   []string // sorted
}

var shapes sync.Map // reflect.Type -> *structShape

func shapeOfStruct(t reflect.Type) *structShape {
	if s, ok := shapes.Load(t); ok {
		return s.(*structShape)
	}
	s := &structShape{fields: typeFields(t), byKey: make(map[string]*jsonField)}
	for i := range s.fields {
		f := &s.fields[i]
		f.container, f.pos = container(f.typ), i
		s.byKey[f.key] = f
		s.keys = append(s.keys, f.key)
	}
	slices.Sort(s.keys)
	v, _ := shapes.LoadOrStore(t, s)
	return v.(*structShape)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
)

// decodesItself reports whether encoding/json hands t's JSON to a method
// of t (UnmarshalJSON or UnmarshalText).
func decodesItself(t reflect.Type) bool {
	if v, ok := selfDecoding.Load(t); ok {
		return v.(bool)
	}
	p := t
	if p.Kind() != reflect.Pointer {
		p = reflect.PointerTo(p)
	}
	self := p.Implements(jsonUnmarshaler) || p.Implements(textUnmarshaler)
	selfDecoding.Store(t, self)
	return self
}

var selfDecoding sync.Map // reflect.Type -> bool

// jsonType names the JSON type of a raw value by its first byte.
func jsonType(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// under puts the field of a *PayloadShapeError that a value inside
// prefix reported under prefix.
func under(err error, prefix string) error {
	if pe, ok := err.(*PayloadShapeError); ok {
		switch {
		case pe.Field == "":
			pe.Field = prefix
		case strings.HasPrefix(pe.Field, "["):
			pe.Field = prefix + pe.Field
		default:
			pe.Field = prefix + "." + pe.Field
		}
	}
	return err
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// checkValue walks raw against t and refuses what encoding/json would
// decode loosely: unknown or case-folded keys, missing required keys,
// null where encoding/json never writes it, and values of the wrong JSON
// type. What it accepts, encoding/json then decodes.
func checkValue(task string, raw []byte, t reflect.Type, path string) error {
	raw = bytes.TrimSpace(raw)
	got := jsonType(raw)
	wrong := func(want string) error {
		return &PayloadShapeError{Task: task, Field: path, Reason: fmt.Sprintf("want %s (%s), got JSON %s", want, t, got)}
	}
	if decodesItself(t) {
		// Its own method decides; run it here to name the field.
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			return shapeErr(task, path, err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if got == "null" {
			return nil
		}
		return checkValue(task, raw, t.Elem(), path)
	case reflect.Interface:
		return nil
	}
	if got == "null" {
		switch t.Kind() {
		case reflect.Slice, reflect.Map:
			return nil
		}
		return &PayloadShapeError{Task: task, Field: path, Reason: "null is not a " + t.String()}
	}
	switch t.Kind() {
	case reflect.Struct:
		if got != "object" {
			return wrong("a JSON object")
		}
		return checkObject(task, raw, t, path)
	case reflect.Map:
		if got != "object" {
			return wrong("a JSON object")
		}
		err := eachMember(raw, func(k, v []byte) error {
			if err := checkValue(task, v, t.Elem(), ""); err != nil {
				return under(err, joinPath(path, string(k)))
			}
			return nil
		})
		if err == errScan {
			return malformed(task, path, raw)
		}
		return err
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			pe := reflect.PointerTo(t.Elem())
			if !pe.Implements(jsonMarshaler) && !pe.Implements(textMarshaler) {
				if got != "string" {
					return wrong("a base64 JSON string")
				}
				return nil
			}
		}
		if got != "array" {
			return wrong("a JSON array")
		}
		n := 0
		err := eachElement(raw, func(i int, e []byte) error {
			n++
			if err := checkValue(task, e, t.Elem(), ""); err != nil {
				return under(err, path+"["+strconv.Itoa(i)+"]")
			}
			return nil
		})
		if err == errScan {
			return malformed(task, path, raw)
		}
		if err != nil {
			return err
		}
		if t.Kind() == reflect.Array && n != t.Len() {
			return &PayloadShapeError{Task: task, Field: path, Reason: fmt.Sprintf("want %d elements (%s), got %d", t.Len(), t, n)}
		}
		return nil
	case reflect.String:
		if got != "string" {
			return wrong("a JSON string")
		}
	case reflect.Bool:
		if got != "boolean" {
			return wrong("a JSON boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		if got != "number" {
			return wrong("a JSON number")
		}
	default:
		return &PayloadShapeError{Task: task, Field: path, Reason: "a " + t.String() + " has no JSON form"}
	}
	return nil
}

// checkObject checks a JSON object against struct type t: unknown keys
// first, then missing required keys, then the scalar values, then the
// values holding others, so that the shallowest problem is reported.
func checkObject(task string, raw []byte, t reflect.Type, path string) error {
	s := shapeOfStruct(t)
	var seenBits uint64
	var seenMany []bool
	if len(s.fields) > 64 {
		seenMany = make([]bool, len(s.fields))
	}
	err := eachMember(raw, func(k, _ []byte) error {
		f, ok := s.byKey[string(k)]
		if !ok {
			reason := "unknown field"
			if sug := suggest.Closest(string(k), s.keys); sug != "" {
				reason += fmt.Sprintf(" (did you mean %q?)", sug)
			} else if len(s.keys) > 0 {
				reason += " (want " + quoteList(s.keys) + ")"
			} else {
				reason += " (" + t.String() + " has no fields)"
			}
			return &PayloadShapeError{Task: task, Field: joinPath(path, string(k)), Reason: reason}
		}
		if seenMany != nil {
			seenMany[f.pos] = true
		} else {
			seenBits |= 1 << f.pos
		}
		return nil
	})
	if err == errScan {
		return malformed(task, path, raw)
	}
	if err != nil {
		return err
	}
	for i := range s.fields {
		f := &s.fields[i]
		seen := seenBits&(1<<i) != 0
		if seenMany != nil {
			seen = seenMany[i]
		}
		if !seen && f.required {
			return &PayloadShapeError{Task: task, Field: joinPath(path, f.key),
				Reason: "missing (required: its field is not a pointer, omitempty or omitzero)"}
		}
	}
	for pass := 0; pass < 2; pass++ {
		err := eachMember(raw, func(k, v []byte) error {
			f := s.byKey[string(k)]
			if f.container != pass {
				return nil
			}
			if f.quoted {
				return checkQuoted(task, v, f, path)
			}
			if err := checkValue(task, v, f.typ, ""); err != nil {
				return under(err, joinPath(path, f.key))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkQuoted checks the value of a field tagged ,string.
func checkQuoted(task string, v []byte, f *jsonField, path string) error {
	got := jsonType(v)
	if got == "null" && f.typ.Kind() == reflect.Pointer {
		return nil
	}
	bad := func(what string) error {
		return &PayloadShapeError{Task: task, Field: joinPath(path, f.key),
			Reason: fmt.Sprintf("want a JSON string holding a %s (the field is tagged ,string), got %s", f.typ, what)}
	}
	if got != "string" {
		return bad("JSON " + got)
	}
	var inner string
	if err := json.Unmarshal(v, &inner); err != nil {
		return shapeErr(task, joinPath(path, f.key), err)
	}
	if err := checkValue(task, []byte(inner), f.typ, ""); err != nil || !json.Valid([]byte(inner)) {
		return bad(strconv.Quote(inner))
	}
	return nil
}

// container is 1 for a type whose JSON holds other values (after its
// pointers), else 0.
func container(t reflect.Type) int {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		if !decodesItself(t) {
			return 1
		}
	}
	return 0
}

// typeFields returns the fields encoding/json reads and writes for struct
// type t, in its order, by its rules: exported fields named by their json
// tag or Go name, fields of untagged embedded structs promoted, the
// shallowest (then the tagged) of several same-named fields winning and
// ties dropped.
func typeFields(t reflect.Type) []jsonField {
	type entry struct {
		typ    reflect.Type
		index  []int
		viaPtr bool
	}
	var current []entry
	next := []entry{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []jsonField
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(e.index[:len(e.index):len(e.index)], i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				optSet := map[string]bool{}
				for o := range strings.SplitSeq(opts, ",") {
					optSet[o] = true
				}
				quoted := false
				if optSet["string"] {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := jsonField{
						key: name, index: index, typ: sf.Type, tagged: name != "", quoted: quoted,
						required: !optSet["omitempty"] && !optSet["omitzero"] && !e.viaPtr && sf.Type.Kind() != reflect.Pointer,
					}
					if f.key == "" {
						f.key = sf.Name
					}
					fields = append(fields, f)
					if count[e.typ] > 1 {
						// Several embeddings of one type at one depth:
						// a duplicate, which the dominance pass drops.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, entry{typ: ft, index: index, viaPtr: e.viaPtr || sf.Type.Kind() == reflect.Pointer})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0:0]
	for i, adv := 0, 0; i < len(fields); i += adv {
		for adv = 1; i+adv < len(fields) && fields[i+adv].key == fields[i].key; adv++ {
		}
		if adv > 1 && len(fields[i].index) == len(fields[i+1].index) && fields[i].tagged == fields[i+1].tagged {
			continue // a tie: encoding/json drops the key
		}
		out = append(out, fields[i])
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// validTagName is encoding/json's test of a json tag's name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// malformed is the error of a JSON text the walk could not read.
func malformed(task, path string, raw []byte) error {
	if err := json.Unmarshal(raw, new(any)); err != nil {
		return shapeErr(task, path, err)
	}
	return &PayloadShapeError{Task: task, Field: path, Reason: "malformed JSON"}
}

// shapeErr turns a decoding error of field into a *PayloadShapeError.
func shapeErr(task, field string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		f := field
		if te.Field != "" {
			f = joinPath(field, te.Field)
		}
		return &PayloadShapeError{Task: task, Field: f,
			Reason: fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &PayloadShapeError{Task: task, Field: joinPath(field, strings.Trim(rest, `"`)), Reason: "unknown field"}
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
