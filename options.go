package queuemax

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// Ptr returns a pointer to v. It fills the optional fields of Opts and
// TaskOptions, where nil means "use the default" and Ptr(0) is an explicit
// zero: Opts{MaxRetries: queuemax.Ptr(0)} disables retries.
func Ptr[T any](v T) *T { return &v }

// Explicit "off" values for Config fields whose zero value means the
// default.
const (
	// AlertOff, as Config.AlertThreshold, raises no alerts.
	AlertOff = -1
	// CircuitOff, as Config.CircuitThreshold, never opens a breaker.
	CircuitOff = -1
	// RetentionOff, as Config.CompletedRetention, keeps no completed job
	// without a result: it is deleted when it completes.
	RetentionOff time.Duration = -1
)

// Opts overrides, for one enqueue, what the task's defaults say. Nil and zero
// fields keep the defaults. Use it through a task handle's With method or as
// EnqueueParams.Opts.
type Opts struct {
	// Priority is 0 (low), 1 (medium) or 2 (high). Nil keeps the task's.
	Priority *Priority
	// MaxRetries is how many times a failed job is retried: N retries mean
	// N+1 attempts. Nil keeps the task's (or Config.MaxRetries); Ptr(0) means
	// one attempt and no retry.
	MaxRetries *int
	// Key is the partition key: jobs with the same key go to the same shard
	// (key mod Shards), which orders them by priority then FIFO. Nil means a
	// random shard.
	Key *int64
	// RunAt delays the job until this time. Zero means now.
	RunAt time.Time
	// Queue puts the job in a named queue (see Config.Queues and
	// Client.Pause). Empty keeps the task's (TaskOptions.Queue), or the
	// default queue.
	Queue string
	// Unique replaces the task's unique options (TaskOptions.Unique) for
	// this job; &UniqueOpts{} makes it not unique. Nil keeps the task's.
	Unique *UniqueOpts
	// UniqueKey is the caller's key of a job unique by key: it makes the
	// job unique by UniqueKey (instead of by its arguments), with the
	// period and statuses of Unique or the task's. Empty means none.
	UniqueKey string
	// Timeout bounds each execution of this job instead of the task's
	// TaskOptions.Timeout; it is stored with the job, so whichever process
	// runs it applies it. Zero keeps the task's; negative is an error.
	Timeout time.Duration
	// Metadata is stored with the job as a JSON object of these keys and
	// returned as Job.Metadata (listings, the admin API, WorkMiddleware).
	// Keys that enqueue middleware set (queuemaxotel's "otel" trace
	// context) are added to it and win over a user key of the same name,
	// so trace context is never clobbered. Nil stores none.
	Metadata map[string]any
	// Tags label the job; Jobs, the CLI (--tag) and the admin API (?tag=)
	// filter by one. Each is 1–MaxTagLength bytes without spaces, commas
	// or control characters, at most MaxTags of them, no duplicates. Nil
	// keeps the task's TaskOptions.Tags; an empty non-nil slice means none.
	Tags []string
	// AllowUnknownTask stores the task name as given when neither this
	// client's handlers nor the store's task catalogue (the tasks workers
	// ran) know it: for a producer whose workers are not deployed yet.
	// Without it such a name is ErrUnknownTask listing the near matches,
	// so that a misspelt or short name is never stored to wait for ever.
	AllowUnknownTask bool
}

// Tag limits (Opts.Tags, TaskOptions.Tags, the tags= annotation).
const (
	MaxTags      = enqueue.MaxTags
	MaxTagLength = enqueue.MaxTagLength
)

// resolved is o as the enqueue resolver takes it.
func (o *Opts) resolved() enqueue.Opts {
	return enqueue.Opts{Priority: o.Priority, MaxRetries: o.MaxRetries, Key: o.Key, RunAt: o.RunAt, Queue: o.Queue,
		Unique: o.Unique, UniqueKey: o.UniqueKey, Timeout: o.Timeout, Metadata: o.Metadata, Tags: o.Tags}
}

// defaults are a task's options as the enqueue resolver takes them.
func (t *TaskOptions) defaults() enqueue.Defaults {
	return enqueue.Defaults{Priority: t.Priority, MaxRetries: t.MaxRetries, RetryDelay: t.RetryDelay, Queue: t.Queue,
		Unique: t.Unique, Tags: t.Tags}
}

// taskRule is a task's limits as runtime/admission takes them.
func taskRule(o TaskOptions) admission.TaskRule {
	return admission.TaskRule{
		Global: store.LimitRule{Rate: o.GlobalRateLimit.Limit, Per: o.GlobalRateLimit.Per, Concurrency: o.GlobalConcurrency},
		Key:    store.LimitRule{Rate: o.KeyRateLimit.Limit, Per: o.KeyRateLimit.Per, Concurrency: o.KeyConcurrency},
		By:     o.LimitBy,
	}
}

// merge returns o with every field of p that is set overriding it.
func (o Opts) merge(p Opts) Opts {
	if p.Priority != nil {
		o.Priority = p.Priority
	}
	if p.MaxRetries != nil {
		o.MaxRetries = p.MaxRetries
	}
	if p.Key != nil {
		o.Key = p.Key
	}
	if !p.RunAt.IsZero() {
		o.RunAt = p.RunAt
	}
	if p.Queue != "" {
		o.Queue = p.Queue
	}
	if p.Unique != nil {
		o.Unique = p.Unique
	}
	if p.UniqueKey != "" {
		o.UniqueKey = p.UniqueKey
	}
	if p.Timeout != 0 {
		o.Timeout = p.Timeout
	}
	if p.Metadata != nil {
		o.Metadata = p.Metadata
	}
	if p.Tags != nil {
		o.Tags = p.Tags
	}
	return o
}

// Rate is a token-bucket limit: Limit tokens per Per, with a burst of Limit.
// The zero Rate means no limit.
type Rate struct {
	Limit int
	Per   time.Duration
}

// TaskOptions are a task's defaults, from its //queuemax:task annotation.
// The zero value means: priority low, Config.MaxRetries, no timeout,
// Config.RetryDelay, no rate limit, no in-process retry.
type TaskOptions struct {
	// Priority of every job of the task unless Opts overrides it.
	Priority Priority
	// MaxRetries of every job unless Opts overrides it. Nil means
	// Config.MaxRetries. At most MaxRetriesLimit.
	MaxRetries *int
	// Timeout bounds one execution: the handler's context is cancelled
	// after it and the attempt fails with a retryable *TimeoutError. Zero
	// means no timeout.
	Timeout time.Duration
	// RetryDelay is the backoff base: attempt n waits RetryDelay·2^(n−1)
	// ±20%, capped at one hour. Zero means Config.RetryDelay.
	RetryDelay time.Duration
	// RateLimit caps how often the task's jobs start, across all workers of
	// the process. The zero Rate means no limit.
	RateLimit Rate
	// RetryOn, when set, selects errors that are retried in the worker, at
	// once and with a short capped backoff, up to InlineRetries times before
	// the attempt counts as failed.
	RetryOn func(error) bool
	// InlineRetries is how many in-process retries RetryOn allows. Zero
	// means 3.
	InlineRetries int
	// CircuitOff switches the task's circuit breaker off: failures never
	// stop its jobs from being claimed (annotation circuit=off).
	CircuitOff bool
	// Queue is the named queue of the task's jobs unless Opts overrides
	// it (annotation queue=emails). Empty means the default queue.
	Queue string
	// Unique makes the task's jobs unique (annotations unique=,
	// unique_for=, unique_states=); the zero value means not unique.
	// Opts.Unique and Opts.UniqueKey override it per job.
	Unique UniqueOpts
	// Tags are the default tags of the task's jobs (annotation
	// tags=a,b); Opts.Tags replaces them for one enqueue.
	Tags []string
	// Aliases are earlier names of the task (annotation
	// aliases=old.Name,other.Name): jobs stored under one of them run as
	// this task (Run renames them when it starts and at every recovery
	// pass), and an enqueue under one stores the task's name. See
	// docs/tasks.md#task-names.
	Aliases []string
	// GlobalRateLimit caps how often the task's jobs start over every
	// process on the same data directory or database (annotation
	// global_rate_limit=100/s): at most Limit in any window of Per, a
	// full bucket letting Limit start at once. The zero Rate means none.
	// See docs/limits.md.
	GlobalRateLimit Rate
	// GlobalConcurrency caps how many of the task's jobs run at once over
	// every process (annotation global_concurrency=N); zero means no cap.
	GlobalConcurrency int
	// LimitBy names a top-level payload key (annotation
	// limit_by=customer_id) whose each distinct value gets limits of its
	// own, so one customer cannot take them all; a payload without the
	// key counts as one more value. With KeyRateLimit or KeyConcurrency
	// set, those are the limits per value and GlobalRateLimit and
	// GlobalConcurrency hold over the whole task beside them; without,
	// GlobalRateLimit and GlobalConcurrency apply per value. It needs a
	// limit. See docs/limits.md.
	LimitBy string
	// KeyRateLimit and KeyConcurrency are the limits of each value of
	// LimitBy (annotations key_rate_limit=10/s, key_concurrency=1), over
	// every process, beside the task-wide global ones: "at most 10 at
	// once, 1 per customer" is GlobalConcurrency 10, KeyConcurrency 1,
	// LimitBy "customer_id". They need LimitBy.
	KeyRateLimit   Rate
	KeyConcurrency int
}

// UniqueOpts makes a task's jobs unique (by arguments, by a key of the
// caller's, by period window), as River's UniqueOpts do; see
// queuemaxtype.UniqueOpts for its fields.
type UniqueOpts = queuemaxtype.UniqueOpts

// Periodic describes when a periodic task runs. Exactly one of Every and
// Cron is set.
type Periodic struct {
	// Every runs the task at this fixed interval.
	Every time.Duration
	// Cron is a standard five-field cron spec or a descriptor such as
	// @hourly or @every 1h; a CRON_TZ=Zone prefix sets its time zone (UTC
	// otherwise).
	Cron string
	// Misfire says what happens to a slot missed while no scheduler ran:
	// MisfireSkip (the default) or MisfireRunOnce.
	Misfire MisfirePolicy
}

// MisfirePolicy says what the scheduler does with a periodic slot whose time
// passed while no scheduler was running (more than the misfire grace ago:
// half the interval, between 1s and 1m).
type MisfirePolicy string

// Misfire policies.
const (
	// MisfireSkip drops missed slots and waits for the next one. It is the
	// default.
	MisfireSkip MisfirePolicy = "skip"
	// MisfireRunOnce runs one catch-up job for all missed slots, then
	// follows the schedule.
	MisfireRunOnce MisfirePolicy = "catch_up"
)

// HandlerFunc runs one job. A non-nil result is stored as the job's result
// (JSON-encoded); a non-nil error fails the attempt.
type HandlerFunc func(ctx context.Context, job *Job) (result any, err error)

// Handler binds a task name to the function that runs its jobs. Generated
// code builds handlers with Define and DefineResult; hand-written ones are
// fine too.
type Handler struct {
	// Name is the task name stored in every job row. It must stay stable
	// while jobs of the task may still be stored.
	Name string
	// Options are the task's defaults.
	Options TaskOptions
	// Periodic, when set, makes the scheduler enqueue the task on a
	// schedule. Periodic tasks take no arguments.
	Periodic *Periodic
	// Func runs one job.
	Func HandlerFunc
	// Validate, when set, checks a raw JSON payload against the task's
	// parameters; every enqueue of the task on this client (typed handles,
	// Client.Enqueue, EnqueueMany, EnqueueFile, the CLI and the admin API)
	// calls it before storing anything. Define and DefineResult set it to
	// DecodeArgs, the decode their Func runs, which dead-letters a stored
	// payload that fails it at once.
	Validate func(payload json.RawMessage) error

	// args is the payload type of a Handler from Define or DefineResult
	// (see TaskNames); nil otherwise. check is the Validate they set: an
	// enqueue skips it, while Validate still is it, for a payload it
	// encoded from a value of args (see Client.prepare).
	args  reflect.Type
	check func(payload json.RawMessage) error
}

// Re-exported leaf types. They are defined, with their full documentation,
// in package github.com/queuemax/queuemax/queuemaxtype (run
// go doc github.com/queuemax/queuemax/queuemaxtype.Job to see a type's
// fields and methods); the storage layer shares them.
type (
	// JobID identifies a job across all shards; see queuemaxtype.JobID for
	// its methods (Shard, Seq, String).
	JobID = queuemaxtype.JobID
	// Job is one stored job; see queuemaxtype.Job for its fields and
	// methods.
	Job = queuemaxtype.Job
	// Status is a job's state; see queuemaxtype.Status.
	Status = queuemaxtype.Status
	// Priority orders jobs within a shard: 0 low, 1 medium, 2 high; see
	// queuemaxtype.Priority for its methods.
	Priority = queuemaxtype.Priority
	// DeadLetter is one row of the dead-letter queue; see
	// queuemaxtype.DeadLetter for its fields.
	DeadLetter = queuemaxtype.DeadLetter
	// ShardStats holds one shard's counts; see queuemaxtype.ShardStats for
	// its fields.
	ShardStats = queuemaxtype.ShardStats
	// JobCount is how many jobs of one task have one status in one shard;
	// see queuemaxtype.JobCount for its fields.
	JobCount = queuemaxtype.JobCount
	// CleanupResult counts what Cleanup deleted; see
	// queuemaxtype.CleanupResult for its fields.
	CleanupResult = queuemaxtype.CleanupResult
	// RecoverResult counts what RecoverOrphans did; see
	// queuemaxtype.RecoverResult for its fields.
	RecoverResult = queuemaxtype.RecoverResult
)

// Statuses and priorities; see queuemaxtype.
const (
	StatusPending    = queuemaxtype.StatusPending
	StatusScheduled  = queuemaxtype.StatusScheduled
	StatusProcessing = queuemaxtype.StatusProcessing
	StatusCompleted  = queuemaxtype.StatusCompleted
	StatusFailed     = queuemaxtype.StatusFailed
	StatusCancelled  = queuemaxtype.StatusCancelled

	PriorityLow    = queuemaxtype.PriorityLow
	PriorityMedium = queuemaxtype.PriorityMedium
	PriorityHigh   = queuemaxtype.PriorityHigh
)

// ParseJobID parses a JobID's decimal form, or "shard:seq"; see
// queuemaxtype.ParseJobID.
func ParseJobID(s string) (JobID, error) { return queuemaxtype.ParseJobID(s) }

// ParseStatus parses a status name; see queuemaxtype.ParseStatus.
func ParseStatus(s string) (Status, error) { return queuemaxtype.ParseStatus(s) }
