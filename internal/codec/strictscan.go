package codec

import (
	"bytes"
	"encoding/json"
	"errors"
)

// errScan is a malformed JSON text found while walking a payload; the
// decode that follows reports it properly.
var errScan = errors.New("malformed JSON")

// skipSpace returns b without leading JSON white space.
func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// valueEnd returns the length of the JSON value at the start of b (no
// leading space), or -1 if it is malformed. It does not validate
// scalars: the decode that follows does.
func valueEnd(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	switch b[0] {
	case '"':
		return stringEnd(b)
	case '{', '[':
		depth := 0
		for i := 0; i < len(b); i++ {
			switch b[i] {
			case '"':
				n := stringEnd(b[i:])
				if n < 0 {
					return -1
				}
				i += n - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return len(b)
}

// stringEnd returns the length of the JSON string at the start of b, or
// -1.
func stringEnd(b []byte) int {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// eachMember calls fn with every key and value of the JSON object obj
// (no leading space), in order, without copying; a key with escapes is
// unescaped. It returns errScan for a malformed object.
func eachMember(obj []byte, fn func(key []byte, val []byte) error) error {
	if len(obj) == 0 || obj[0] != '{' {
		return errScan
	}
	b := skipSpace(obj[1:])
	if len(b) > 0 && b[0] == '}' {
		return nil
	}
	for {
		if len(b) == 0 || b[0] != '"' {
			return errScan
		}
		n := stringEnd(b)
		if n < 0 {
			return errScan
		}
		key := b[1 : n-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(b[:n], &k); err != nil {
				return errScan
			}
			key = []byte(k)
		}
		b = skipSpace(b[n:])
		if len(b) == 0 || b[0] != ':' {
			return errScan
		}
		b = skipSpace(b[1:])
		m := valueEnd(b)
		if m < 0 {
			return errScan
		}
		if err := fn(key, b[:m]); err != nil {
			return err
		}
		b = skipSpace(b[m:])
		if len(b) == 0 {
			return errScan
		}
		if b[0] == '}' {
			return nil
		}
		if b[0] != ',' {
			return errScan
		}
		b = skipSpace(b[1:])
	}
}

// eachElement calls fn with every element of the JSON array arr (no
// leading space), in order, without copying.
func eachElement(arr []byte, fn func(i int, val []byte) error) error {
	if len(arr) == 0 || arr[0] != '[' {
		return errScan
	}
	b := skipSpace(arr[1:])
	if len(b) > 0 && b[0] == ']' {
		return nil
	}
	for i := 0; ; i++ {
		m := valueEnd(b)
		if m < 0 {
			return errScan
		}
		if err := fn(i, b[:m]); err != nil {
			return err
		}
		b = skipSpace(b[m:])
		if len(b) == 0 {
			return errScan
		}
		if b[0] == ']' {
			return nil
		}
		if b[0] != ',' {
			return errScan
		}
		b = skipSpace(b[1:])
	}
}
