// Package struct_params is a golden case: struct parameters whose JSON
// forms need care (omitempty, omitzero, json:"-", ,string, embedded
// structs, types with their own codecs, generic types). Every value the
// generated code encodes must decode unchanged.
package struct_params

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Payload is an ordinary struct with an optional field.
type Payload struct {
	Seq  int    `json:"seq"`
	Note string `json:"note,omitempty"`
}

// Process takes one ordinary struct.
//
//queuemax:task
func Process(ctx context.Context, p Payload) error { return nil }

// Bill takes a struct with every kind of field that needs care, and a
// generic one.
//
//queuemax:task retries=2
func Bill(ctx context.Context, inv Invoice, tally Pair[string, int], at time.Time, addr netip.Addr) error {
	return nil
}

// Invoice has fields that encoding/json may omit or encodes its own way.
type Invoice struct {
	Base
	*Audit
	AmountCents int64           `json:"amount_cents"`
	Count       int             `json:"count,string"`
	Due         time.Time       `json:"due,omitzero"`
	Ref         UUID            `json:"ref"`
	Price       Cents           `json:"price"`
	Raw         json.RawMessage `json:"raw,omitempty"`
	Lines       []Line          `json:"lines"`
	Labels      map[string]Line `json:"labels,omitempty"`
	Secret      string          `json:"-"`
	Extra       *Line           `json:"extra,omitempty"`
	Flags       [3]bool         `json:"flags"`
}

// Base is embedded: its ID is a key of Invoice.
type Base struct {
	ID string `json:"id"`
}

// Audit is embedded by pointer: its key is optional.
type Audit struct {
	By string `json:"by"`
}

// Line is one invoice line.
type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Pair is a generic struct.
type Pair[K comparable, V any] struct {
	Key K `json:"key"`
	Val V `json:"val,omitempty"`
}

// UUID is a 16-byte identifier written as hex text.
type UUID [16]byte

// MarshalText writes u as 32 hex digits.
func (u UUID) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(u[:])), nil }

// UnmarshalText reads 32 hex digits.
func (u *UUID) UnmarshalText(b []byte) error {
	if len(b) != 32 {
		return fmt.Errorf("uuid: want 32 hex digits, got %d", len(b))
	}
	_, err := hex.Decode(u[:], b)
	return err
}

// Cents is a decimal amount written as a JSON string ("12.34").
type Cents int64

// MarshalJSON writes c as a decimal string.
func (c Cents) MarshalJSON() ([]byte, error) {
	sign, n := "", uint64(c)
	if c < 0 {
		sign, n = "-", -n
	}
	return []byte(fmt.Sprintf(`"%s%d.%02d"`, sign, n/100, n%100)), nil
}

// UnmarshalJSON reads a decimal string.
func (c *Cents) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("cents: want a JSON string: %w", err)
	}
	neg := strings.HasPrefix(s, "-")
	whole, frac, ok := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if !ok || len(frac) != 2 {
		return fmt.Errorf("cents: %q is not a decimal with 2 places", s)
	}
	n, err := strconv.ParseUint(whole+frac, 10, 64)
	if err != nil {
		return fmt.Errorf("cents: %w", err)
	}
	if neg {
		n = -n
	}
	*c = Cents(n)
	return nil
}
