package store

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
)

// Per-key limits (TaskOptions.LimitBy): a task's global limits apply per
// distinct value of one top-level payload key. The key's value is read
// at claim time, from a bounded number of ready rows (KeyClaimer.
// PeekKeys) and, behind them, from each other key's first ready row
// (KeyClaimer.KeyHeads); each key's state is its own row (scope TaskScope(task), key
// LimitKey(by, value)), created by its first take and deleted when it
// holds nothing (LimitState.Empty) or, for rows left with only old
// starts, by LimitSweep.

// KeyCandidate is one ready job as PeekKeys reports it: its id, priority
// and the JSON text of its payload's key (Missing: the payload has no
// such key).
type KeyCandidate struct {
	ID       JobID
	Priority int
	Queue    string
	Value    string
	Missing  bool
}

// KeyClaimer is the per-key limit part of Store.
type KeyClaimer interface {
	// PeekKeys returns up to max ready jobs of p.Tasks[0] (under p's
	// queue filter) in claim order (priority, then FIFO, shard by shard
	// on a sharded store), with the value of their payload's top-level
	// key by. It claims nothing and may run on a reader.
	PeekKeys(ctx context.Context, p ClaimParams, by string, max int) ([]KeyCandidate, error)
	// KeyHeads walks the distinct values of p.Tasks[0]'s payload key by
	// that have ready jobs, in the order of their JSON text, starting
	// after after ("": from the first, the payload without the key
	// first), and returns the first ready job in claim order (under p's
	// queue filter) of each key whose LimitKey is not in skip: at most
	// max, by priority then walk order. It stops after KeyWalkSteps keys
	// and returns where it stopped ("": at the end of the keys), where
	// the next walk resumes, so that every key is reached in turn. Each
	// key costs one index seek however many jobs it holds (the index of
	// the task's ready jobs by key is created on first use); no job is
	// read beyond the heads. It claims nothing; due scheduled jobs count
	// only once promoted (see PeekKeys).
	KeyHeads(ctx context.Context, p ClaimParams, by, after string, skip []string, max int) ([]KeyCandidate, string, error)
	// ClaimIDs claims those of ids that are still ready, for p.WorkerID,
	// in one statement per shard.
	ClaimIDs(ctx context.Context, p ClaimParams, ids []JobID) ([]*Job, error)
	// LimitSweep deletes the keyed state rows (Key != "") of scopes not
	// written in the age before now (the caller's clock): rows whose
	// starts and slots are all older than the rule's window and the slots'
	// expiry hold nothing.
	LimitSweep(ctx context.Context, scopes []string, now time.Time, age time.Duration) (int, error)
}

// LimitKey names the state row of value (a KeyCandidate's) of payload
// key by: "customer_id=42", `customer_id="ab"`; a payload without the key
// is "customer_id=" (its own key: such jobs share one limit).
func LimitKey(by string, value string, missing bool) string {
	if missing {
		return by + "="
	}
	return by + "=" + value
}

// PayloadKey returns the JSON text of payload's top-level key by (as the
// stores' PeekKeys report it) and whether the payload has it.
func PayloadKey(payload []byte, by string) (value string, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return "", false
	}
	raw, ok := m[by]
	if !ok {
		return "", false
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw), true
	}
	return b.String(), true
}

// Window is how long a spent token of r stays out (its period and a
// margin).
func (r LimitRule) Window() time.Duration { return r.window() }

// KeyWalkSteps bounds how many keys one KeyClaimer.KeyHeads call walks.
const KeyWalkSteps = 16384

// CheckKeyName reports whether by may name a payload key of a per-key
// limit: 1 to 64 letters, digits, '_' or '-' (the stores write it into
// SQL as a literal).
func CheckKeyName(by string) bool {
	if by == "" || len(by) > 64 {
		return false
	}
	for _, r := range by {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
