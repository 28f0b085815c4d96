package queuemax

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// ErrInvalidUnique is returned for unique options that cannot work: by
// arguments and by key at once, unique_states without a uniqueness, a
// status set missing pending, scheduled or processing, a negative period,
// or a job unique by key enqueued without Opts.UniqueKey.
var ErrInvalidUnique = errors.New("queuemax: invalid unique options")

// UniqueOpts makes a task's jobs unique, as River's UniqueOpts do: an
// enqueue whose key is held by a stored job in one of the counted statuses
// inserts nothing and returns that job's ID (see EnqueueResult). The key
// is the task name plus the partition key (Opts.Key) when set, plus
// whatever the fields select. The zero value means not unique.
//
// The store decides with a unique index over (key, counted status), so
// the answer holds across processes and concurrent enqueues; a job frees
// its key when its status leaves ByState (or it is deleted), never by a
// read-then-write.
type UniqueOpts struct {
	// ByArgs adds the job's arguments (its payload, as canonical JSON:
	// key order and spacing do not matter) to the key
	// (annotation unique=args).
	ByArgs bool
	// ByKey adds Opts.UniqueKey, a key the caller picks, to the key
	// (annotation unique=key); an enqueue without one is
	// ErrInvalidUnique. Not with ByArgs.
	ByKey bool
	// ByPeriod adds the period window holding the job's run time (its
	// RunAt, or the enqueue time) to the key: windows are aligned to UTC
	// multiples of ByPeriod, so ByPeriod: time.Hour makes jobs run in the
	// same clock hour duplicates (annotation unique_for=1h). Zero means
	// no window.
	ByPeriod time.Duration
	// ByState lists the statuses during which a job holds its key. Nil
	// means pending, scheduled and processing; a list must include those
	// three (a job moves between them without asking), and may add
	// completed, failed and cancelled: with completed, a job that
	// succeeded keeps blocking its key while its row is kept (see
	// Config.CompletedRetention, if set) or until its window ends
	// (annotation unique_states=pending,scheduled,processing,completed).
	ByState []Status
}

// IsZero reports whether u leaves jobs not unique.
func (u UniqueOpts) IsZero() bool {
	return !u.ByArgs && !u.ByKey && u.ByPeriod == 0 && u.ByState == nil
}

// defaultUniqueStates are the statuses that count when ByState is nil.
var defaultUniqueStates = []Status{StatusPending, StatusScheduled, StatusProcessing}

// check validates u; a nil error with unique false means u is zero.
func (u UniqueOpts) check() error {
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
			if _, err := ParseStatus(string(s)); err != nil {
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

// states returns the counted statuses, deduplicated, in Statuses order.
func (u UniqueOpts) states() []Status {
	if u.ByState == nil {
		return defaultUniqueStates
	}
	var out []Status
	for _, s := range store.Statuses {
		if slices.Contains(u.ByState, s) {
			out = append(out, s)
		}
	}
	return out
}

// EnqueueResult is what one enqueue did.
type EnqueueResult struct {
	// ID is the job's ID: the new job's, or for a duplicate the stored
	// job's that holds the unique key.
	ID JobID
	// Duplicate is true when nothing was inserted because the job is
	// unique and a stored job with its key is in a counted status (River's
	// UniqueSkippedAsDuplicate).
	Duplicate bool
}

// resolveUnique returns the unique params of one job, or nil when it is not
// unique. p must have Task, Payload, PartitionKey, RunAt and Now set.
func resolveUnique(def *TaskOptions, o Opts, p *store.InsertParams) (*store.UniqueParams, error) {
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
	if err := u.check(); err != nil {
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
	return &store.UniqueParams{Key: hexSum(h), States: u.states()}, nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

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
		return nil, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	return json.Marshal(v)
}

// EnqueueManyResults is EnqueueMany reporting, per job, its ID and whether
// it was a duplicate of a stored unique job. Duplicates are not errors: the
// other jobs are stored, all or nothing as with EnqueueMany, and a
// duplicate inside the batch (two jobs with one key) stores the first and
// reports the second as its duplicate.
func (c *Client) EnqueueManyResults(ctx context.Context, jobs []EnqueueParams) ([]EnqueueResult, error) {
	ps, err := c.prepareMany(jobs)
	if err != nil {
		return nil, err
	}
	ids, err := c.insertPrepared(ctx, ps)
	if err != nil {
		return nil, err
	}
	return results(ps, ids), nil
}

// results pairs stored IDs with the duplicate flags the store set.
func results(ps []store.InsertParams, ids []JobID) []EnqueueResult {
	out := make([]EnqueueResult, len(ids))
	for i, id := range ids {
		out[i] = EnqueueResult{ID: id, Duplicate: isDuplicate(&ps[i])}
	}
	return out
}

func isDuplicate(p *store.InsertParams) bool { return p.Unique != nil && p.Unique.Duplicate }

// EnqueueResult is Enqueue reporting whether the job was a duplicate of a
// stored unique job: then nothing was inserted and the result's ID is that
// job's. (Enqueue returns the same ID with a nil error.)
func (c *Client) EnqueueResult(ctx context.Context, task string, payload any, o Opts) (EnqueueResult, error) {
	return c.enqueueResult(ctx, EnqueueParams{Task: task, Payload: payload, Opts: o})
}

// EnqueueResult is Enqueue reporting whether the job was a duplicate of a
// stored unique job: then nothing was inserted and the result's ID is that
// job's. (Enqueue returns the same ID with a nil error.)
func (t Task[A]) EnqueueResult(ctx context.Context, args A) (EnqueueResult, error) {
	if t.c == nil {
		return EnqueueResult{}, ErrNotBound
	}
	return t.c.enqueueResult(ctx, t.params(args))
}

// EnqueueManyResults is EnqueueMany reporting duplicates per job; see
// Client.EnqueueManyResults.
func (t Task[A]) EnqueueManyResults(ctx context.Context, args []A) ([]EnqueueResult, error) {
	if t.c == nil {
		return nil, ErrNotBound
	}
	params := make([]EnqueueParams, len(args))
	for i, a := range args {
		params[i] = t.params(a)
	}
	return t.c.EnqueueManyResults(ctx, params)
}
