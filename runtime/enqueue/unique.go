package enqueue

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/queuemax/queuemax/internal/codec"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// defaultUniqueStates are the statuses that count when ByState is nil.
var defaultUniqueStates = []queuemaxtype.Status{queuemaxtype.StatusPending, queuemaxtype.StatusScheduled, queuemaxtype.StatusProcessing}

// uniqueParams returns the unique params of one job, or nil when it is not
// unique. p must have Task, Payload, PartitionKey, RunAt and Now set.
func uniqueParams(def *Defaults, o *Opts, p *store.InsertParams) (*store.UniqueParams, error) {
	u := def.Unique
	if o.Unique != nil {
		u = *o.Unique
	}
	if o.UniqueKey != "" {
		u.ByKey, u.ByArgs = true, false
	}
	if u.IsZero() {
		return nil, nil
	}
	if err := CheckUnique(u); err != nil {
		return nil, err
	}
	h := sha256.New()
	field := func(name, value string) {
		// Length-prefixed, so no value can imitate another field.
		fmt.Fprintf(h, "%s:%d:%s;", name, len(value), value)
	}
	field("v", "1")
	field("task", p.Task)
	if p.PartitionKey != nil {
		field("pkey", strconv.FormatInt(*p.PartitionKey, 10))
	}
	switch {
	case u.ByArgs:
		canon, err := canonicalJSON(p.Payload)
		if err != nil {
			return nil, err
		}
		field("args", string(canon))
	case u.ByKey:
		if o.UniqueKey == "" {
			return nil, fmt.Errorf("%w: task %q is unique by key: set Opts.UniqueKey", ErrInvalidUnique, p.Task)
		}
		field("key", o.UniqueKey)
	}
	if u.ByPeriod > 0 {
		at := p.Now
		if p.RunAt.After(at) {
			at = p.RunAt
		}
		field("window", strconv.FormatInt(at.UTC().Truncate(u.ByPeriod).UnixNano(), 10))
	}
	return &store.UniqueParams{Key: hex.EncodeToString(h.Sum(nil)), States: uniqueStates(u)}, nil
}

// uniqueStates returns the counted statuses of u, deduplicated, in
// Statuses order.
func uniqueStates(u queuemaxtype.UniqueOpts) []queuemaxtype.Status {
	if u.ByState == nil {
		return defaultUniqueStates
	}
	var out []queuemaxtype.Status
	for _, s := range queuemaxtype.Statuses {
		if slices.Contains(u.ByState, s) {
			out = append(out, s)
		}
	}
	return out
}

// uniqueShard routes a unique job without a partition key: every job with
// one key goes to one shard, where that shard's unique index decides. (The
// SQLite shards are separate files, so no index spans them.)
func uniqueShard(key string, shards int) int {
	b, err := hex.DecodeString(key[:16])
	if err != nil || len(b) < 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(b) % uint64(shards))
}

// canonicalJSON re-encodes a JSON object with sorted keys and no spacing,
// keeping numbers as written.
func canonicalJSON(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", codec.ErrInvalidPayload, err)
	}
	return json.Marshal(v)
}
