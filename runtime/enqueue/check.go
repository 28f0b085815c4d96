package enqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/queuemax/queuemax/internal/codec"
	"github.com/queuemax/queuemax/queuemaxtype"
)

// PayloadError explains why a payload was rejected. It wraps
// ErrInvalidPayload (the root package's, re-exported from internal/codec).
type PayloadError struct {
	Reason string
}

func (e *PayloadError) Error() string { return "queuemax: invalid payload: " + e.Reason }

// Unwrap returns ErrInvalidPayload.
func (e *PayloadError) Unwrap() error { return codec.ErrInvalidPayload }

// Limits of a job's fields; the root package re-exports them.
const (
	// MaxRetriesLimit is the largest number of retries a job may have.
	MaxRetriesLimit = 1000
	// MaxPayloadBytes bounds a payload and a job's metadata.
	MaxPayloadBytes = 10 << 20
	// MaxPayloadDepth bounds a payload's nesting (the root object is
	// level 0).
	MaxPayloadDepth = 20
	// MaxTags and MaxTagLength bound a job's tags.
	MaxTags      = 20
	MaxTagLength = 64
)

// Errors of a job that cannot be stored as asked; the root package
// re-exports them under the same names.
var (
	ErrInvalidPriority = errors.New("queuemax: invalid priority (want 0, 1 or 2)")
	ErrInvalidRetries  = errors.New("queuemax: invalid max retries (want 0 or more)")
	ErrInvalidTag      = errors.New("queuemax: invalid tag")
	ErrInvalidTimeout  = errors.New("queuemax: invalid timeout (want 0 or more)")
	ErrInvalidUnique   = errors.New("queuemax: invalid unique options")
	ErrUnknownQueue    = errors.New("queuemax: unknown queue")
)

// CheckRetries returns an error wrapping ErrInvalidRetries unless
// 0 ≤ n ≤ MaxRetriesLimit.
func CheckRetries(n int) error {
	if n < 0 || n > MaxRetriesLimit {
		return fmt.Errorf("%w: got %d (want 0–%d)", ErrInvalidRetries, n, MaxRetriesLimit)
	}
	return nil
}

// CheckTags returns an error wrapping ErrInvalidTag naming the first bad
// tag of tags.
func CheckTags(tags []string) error {
	if len(tags) > MaxTags {
		return fmt.Errorf("%w: %d tags (at most %d)", ErrInvalidTag, len(tags), MaxTags)
	}
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		switch {
		case t == "":
			return fmt.Errorf("%w: tag %d is empty", ErrInvalidTag, i)
		case len(t) > MaxTagLength:
			return fmt.Errorf("%w: tag %q is %d bytes (at most %d)", ErrInvalidTag, t, len(t), MaxTagLength)
		case !utf8.ValidString(t) || strings.ContainsFunc(t, func(r rune) bool { return r == ',' || unicode.IsSpace(r) || unicode.IsControl(r) }):
			return fmt.Errorf("%w: tag %q has a space, comma or control character", ErrInvalidTag, t)
		case seen[t]:
			return fmt.Errorf("%w: tag %q appears twice", ErrInvalidTag, t)
		}
		seen[t] = true
	}
	return nil
}

// CheckMetadata checks that raw is a JSON object of at most
// MaxPayloadBytes.
func CheckMetadata(raw json.RawMessage) error {
	trimmed := bytes.TrimSpace(raw)
	switch {
	case len(raw) > MaxPayloadBytes:
		return fmt.Errorf("%w: metadata of %d bytes exceeds the %d-byte limit", codec.ErrInvalidPayload, len(raw), MaxPayloadBytes)
	case len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed):
		return fmt.Errorf("%w: metadata must be a JSON object", codec.ErrInvalidPayload)
	}
	return nil
}

// CheckUnique validates u.
func CheckUnique(u queuemaxtype.UniqueOpts) error {
	switch {
	case u.ByArgs && u.ByKey:
		return fmt.Errorf("%w: ByArgs and ByKey exclude each other", ErrInvalidUnique)
	case u.ByPeriod < 0:
		return fmt.Errorf("%w: negative ByPeriod %v", ErrInvalidUnique, u.ByPeriod)
	case u.ByState != nil && !u.ByArgs && !u.ByKey && u.ByPeriod == 0:
		return fmt.Errorf("%w: ByState without ByArgs, ByKey or ByPeriod", ErrInvalidUnique)
	}
	if u.ByState != nil {
		for _, s := range u.ByState {
			if _, err := queuemaxtype.ParseStatus(string(s)); err != nil {
				return fmt.Errorf("%w: ByState: unknown status %q", ErrInvalidUnique, s)
			}
		}
		for _, need := range defaultUniqueStates {
			if !slices.Contains(u.ByState, need) {
				return fmt.Errorf("%w: ByState must include pending, scheduled and processing (missing %s)", ErrInvalidUnique, need)
			}
		}
	}
	return nil
}

// EncodePayload marshals v (a json.RawMessage or []byte is taken as it
// is) and checks it with CheckPayload. What json.Marshal returns is not
// scanned for validity again: encoding/json writes valid JSON and checks
// what a MarshalJSON method returns (an invalid one is Marshal's error),
// so only the size, the object and the depth are left to check.
func EncodePayload(v any) (json.RawMessage, error) {
	var raw []byte
	valid := false
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
		raw, valid = b, true
	}
	if err := checkPayload(raw, valid); err != nil {
		return nil, err
	}
	return raw, nil
}

// CheckPayload validates raw JSON: an object, at most MaxPayloadBytes,
// nested at most MaxPayloadDepth levels (the root object is level 0). Its
// error is a *PayloadError.
func CheckPayload(raw []byte) error { return checkPayload(raw, false) }

// checkPayload is CheckPayload, without the validity scan when raw is
// known to be valid JSON (encoding/json's own output).
func checkPayload(raw []byte, valid bool) error {
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
	if !valid && !json.Valid(raw) {
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
