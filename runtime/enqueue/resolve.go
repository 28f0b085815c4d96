package enqueue

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/queuemax/queuemax/internal/codec"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Defaults are a task's defaults for its jobs (the root package's
// TaskOptions, as far as a new job needs them).
type Defaults struct {
	Priority   queuemaxtype.Priority
	MaxRetries *int          // nil: Resolver.MaxRetries
	RetryDelay time.Duration // zero: Resolver.RetryDelay
	Queue      string
	Unique     queuemaxtype.UniqueOpts
	Tags       []string
}

// Opts are one enqueue's overrides of the task's Defaults (the root
// package's Opts); nil and zero fields keep the defaults.
type Opts struct {
	Priority   *queuemaxtype.Priority
	MaxRetries *int
	Key        *int64
	RunAt      time.Time
	Queue      string
	Unique     *queuemaxtype.UniqueOpts
	UniqueKey  string
	Timeout    time.Duration
	Metadata   map[string]any
	Tags       []string
}

// Resolver turns a task's defaults and an enqueue's options into the
// store's InsertParams. Its fields are the client's settings; it is safe
// for concurrent use once set.
type Resolver struct {
	// Shards is the store's shard count, for Place.
	Shards int
	// MaxRetries and RetryDelay are the defaults of jobs whose task sets
	// none (Config.MaxRetries, Config.RetryDelay).
	MaxRetries int
	RetryDelay time.Duration
	// Works, when set, reports whether a named queue may be enqueued into
	// (the client works it); an enqueue into another is ErrUnknownQueue.
	Works func(queue string) bool
	// Now is the clock of the jobs' creation times.
	Now func() time.Time
}

// Resolve checks one job of task with the encoded payload raw (already
// checked by the caller against the task's parameters) and resolves its
// options: o over def over the Resolver's defaults. Its result has no
// shard yet: Place chooses it, after the enqueue middleware.
func (r *Resolver) Resolve(task string, raw json.RawMessage, def *Defaults, o *Opts) (store.InsertParams, error) {
	prio := def.Priority
	if o.Priority != nil {
		prio = *o.Priority
	}
	if !prio.Valid() {
		return store.InsertParams{}, fmt.Errorf("%w: got %d", ErrInvalidPriority, prio)
	}
	retries := r.retries(def)
	if o.MaxRetries != nil {
		retries = *o.MaxRetries
	}
	if err := CheckRetries(retries); err != nil {
		return store.InsertParams{}, err
	}
	delay := def.RetryDelay
	if delay == 0 {
		delay = r.RetryDelay
	}
	if o.Timeout < 0 {
		return store.InsertParams{}, fmt.Errorf("%w: got %s", ErrInvalidTimeout, o.Timeout)
	}
	tags := def.Tags
	if o.Tags != nil {
		tags = o.Tags
		if err := CheckTags(tags); err != nil {
			return store.InsertParams{}, err
		}
	}
	var meta json.RawMessage
	if o.Metadata != nil {
		b, err := json.Marshal(o.Metadata)
		if err != nil {
			return store.InsertParams{}, fmt.Errorf("%w: metadata: %v", codec.ErrInvalidPayload, err)
		}
		if err := CheckMetadata(b); err != nil {
			return store.InsertParams{}, err
		}
		meta = b
	}
	p := store.InsertParams{
		Task:         task,
		Payload:      raw,
		PartitionKey: o.Key,
		Priority:     prio,
		MaxAttempts:  retries + 1,
		RetryDelay:   delay,
		RunAt:        o.RunAt,
		Timeout:      o.Timeout,
		Tags:         slices.Clone(tags),
		Metadata:     meta,
		Now:          r.Now(),
	}
	var err error
	if p.Queue, err = r.queue(def, o); err != nil {
		return store.InsertParams{}, err
	}
	if p.Unique, err = uniqueParams(def, o, &p); err != nil {
		return store.InsertParams{}, err
	}
	return p, nil
}

// retries returns the retries of a job of a task with defaults def.
func (r *Resolver) retries(def *Defaults) int {
	if def.MaxRetries != nil {
		return *def.MaxRetries
	}
	return r.MaxRetries
}

// Base returns the priority and max attempts of a job of a task with
// defaults def that no enqueue's options override (RequeueDead re-creates
// with them a job whose row is gone).
func (r *Resolver) Base(def *Defaults) (queuemaxtype.Priority, int) {
	return def.Priority, r.retries(def) + 1
}

// queue resolves one enqueue's queue: o.Queue, else the task's, else the
// default queue (stored as "").
func (r *Resolver) queue(def *Defaults, o *Opts) (string, error) {
	q := def.Queue
	if o.Queue != "" {
		q = o.Queue
	}
	if q == "" || q == store.DefaultQueue {
		return "", nil
	}
	if err := store.CheckQueueName(q); err != nil {
		return "", err
	}
	if r.Works != nil && !r.Works(q) {
		return "", fmt.Errorf("%w: %q (Config.Queues does not list it)", ErrUnknownQueue, q)
	}
	return q, nil
}

// TaskDefaults returns the priority and max attempts a new job of each
// task (defaults: each task's Defaults) gets when nothing overrides them,
// and those of a task without a handler (RequeueDead's defaults).
func (r *Resolver) TaskDefaults(defaults map[string]Defaults) (map[string]store.TaskDefaults, store.TaskDefaults) {
	var none Defaults
	prio, maxAttempts := r.Base(&none)
	fallback := store.TaskDefaults{Priority: prio, MaxAttempts: maxAttempts}
	out := make(map[string]store.TaskDefaults, len(defaults))
	for name, d := range defaults {
		prio, maxAttempts := r.Base(&d)
		out[name] = store.TaskDefaults{Priority: prio, MaxAttempts: maxAttempts}
	}
	return out, fallback
}
