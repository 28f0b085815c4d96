package queuemax

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// encodePayload marshals v and checks that it is a JSON object within the
// size and depth limits.
func encodePayload(v any) (json.RawMessage, error) {
	var raw []byte
	switch p := v.(type) {
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &PayloadError{Reason: "not JSON-encodable: " + err.Error()}
		}
		raw = b
	}
	if err := checkPayload(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// checkPayload validates raw JSON: an object, at most MaxPayloadBytes, nested
// at most MaxPayloadDepth levels (the root object is level 0).
func checkPayload(raw []byte) error {
	if len(raw) > MaxPayloadBytes {
		return &PayloadError{Reason: fmt.Sprintf("%d bytes exceeds the %d-byte limit", len(raw), MaxPayloadBytes)}
	}
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		kind := "empty"
		if len(trimmed) > 0 {
			kind = jsonKind(trimmed[0])
		}
		return &PayloadError{Reason: "must be a JSON object, got " + kind}
	}
	if !json.Valid(raw) {
		return &PayloadError{Reason: "not valid JSON"}
	}
	// Depth scan, as queue-max counts it: the root object is level 0, and a
	// value (scalar or container) inside d open containers is at level d.
	// Any value at level MaxPayloadDepth+1 or deeper is rejected.
	depth, maxLevel := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
			continue
		}
		switch ch {
		case '"':
			inString = true
			maxLevel = max(maxLevel, depth)
		case '{', '[':
			maxLevel = max(maxLevel, depth) // the container is a value at this level
			depth++
		case '}', ']':
			depth--
		case ' ', '\t', '\r', '\n', ',', ':':
		default:
			maxLevel = max(maxLevel, depth)
		}
	}
	if maxLevel > MaxPayloadDepth {
		return &PayloadError{Reason: fmt.Sprintf("nesting exceeds %d levels", MaxPayloadDepth)}
	}
	return nil
}

func jsonKind(b byte) string {
	switch {
	case b == '[':
		return "array"
	case b == '"':
		return "string"
	case b == 't' || b == 'f':
		return "boolean"
	case b == 'n':
		return "null"
	default:
		return "number"
	}
}
