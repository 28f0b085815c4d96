package queuemax

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/queuemax/queuemax/internal/clock"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/scale"
	"github.com/queuemax/queuemax/runtime/shard"
	"github.com/queuemax/queuemax/runtime/store"
)

// Durability selects how hard SQLite works to keep committed transactions
// across an operating-system crash or power loss.
type Durability int

const (
	// DurabilityNormal is synchronous=NORMAL in WAL mode: a committed job
	// survives a crash of the process, but the last transactions may be lost
	// on power loss. This is the default, as in queue-max.
	DurabilityNormal Durability = iota
	// DurabilityFull is synchronous=FULL: every commit is fsynced.
	DurabilityFull
)

// Store is where a client keeps its jobs, for Config.Store. Programs do not
// implement it: they open one, such as the PostgreSQL store of module
// github.com/queuemax/queuemax/queuemaxpg, and pass it in. Nil means the
// embedded SQLite store. docs/stores.md says how to write a store.
type Store = store.Store

// Hooks are optional callbacks around each job Run or Client.Work
// executes; see queuemaxtype.Hooks for its fields and when each runs.
type Hooks = queuemaxtype.Hooks

// Autoscale makes Run vary how many jobs it executes at once between Min and
// Max by the pending backlog, with queue-max's rule: above UpThreshold add
// max(1, pending/UpThreshold) workers, below DownThreshold remove one,
// checking every CheckInterval and acting at most once per Cooldown. Zero
// fields mean Min 1, Max 10, UpThreshold 100, DownThreshold 10,
// CheckInterval 60s and Cooldown 30s. See scale.Policy
// (go doc github.com/queuemax/queuemax/runtime/scale.Policy) for its fields
// and methods.
type Autoscale = scale.Policy

// QueueConfig configures one named queue of Config.Queues.
type QueueConfig struct {
	// MaxWorkers is how many of Config.Workers may run this queue's jobs
	// at once; the queue never takes more, however many of its jobs wait.
	// It must be at least 1 (a queue that should not run is paused with
	// Client.Pause, or left out of Queues).
	MaxWorkers int
}

// Config configures a Client. Every field's zero value means its default,
// so Config{} opens the embedded SQLite store, six shards in ./data. queuemaxenv.Config fills it from
// queue-max's environment variables.
type Config struct {
	// Store is where jobs are kept: a store the program opened, such as
	// queuemaxpg.Open's PostgreSQL store (module
	// github.com/queuemax/queuemax/queuemaxpg). The client owns it: Close
	// closes it, and so does an Open that fails. Nil means the embedded
	// SQLite store in Dir, configured by the fields below up to Durability;
	// with a Store set those fields belong to no store, and setting one is
	// a *ConfigError naming it.
	Store Store
	// The default store's settings: SQLite shard files in a data directory.

	// Dir is the data directory holding shard_0.db … shard_N-1.db. It is
	// created if missing. Empty means "./data" (env DATA_DIR).
	Dir string
	// Shards is the number of shard files. Zero means the number already
	// in Dir, or 6 for a new directory (env NUM_SHARDS). Reopening a
	// directory with a different count fails with ErrShardMismatch. At
	// most 1024.
	Shards int
	// DirMode is the permission of a data directory Open creates. Zero
	// means 0700.
	DirMode os.FileMode
	// FileMode is the permission of the shard files (and their -wal and
	// -shm companions) and the lock file Open creates. Zero means 0600.
	FileMode os.FileMode
	// ReadOnly opens an existing data directory without creating, migrating
	// or changing anything, for inspection tools: Open fails if Dir or its
	// shard files do not exist, and every write returns ErrReadOnly. It
	// works on a read-only file system and on a directory of another user
	// that grants read access.
	ReadOnly bool
	// Handlers are the tasks this client can run, usually the generated
	// Handlers(). They are fixed after Open. A client without handlers can
	// still enqueue.
	Handlers []Handler
	// AllowUnknownTasks lets the client enqueue task names that neither its
	// Handlers nor the store's task catalogue (the tasks workers ran, see
	// Client.TaskCatalog) know, as written: a producer whose workers are
	// not deployed yet. Without it such an enqueue fails with
	// ErrUnknownTask listing the near matches, so that a misspelt, short
	// or renamed task is caught instead of waiting forever, whether or not
	// a worker is live. Opts.AllowUnknownTask does the same for one enqueue.
	AllowUnknownTasks bool
	// DefaultHandler runs jobs stored without a task name: those that
	// queue-max wrote (its rows have no task column) and those enqueued
	// with an empty task. The job's Payload is the stored JSON object. Nil
	// means such jobs wait for a process that has one (or a catch-all
	// Handler with Name ""). It cannot be combined with a catch-all.
	DefaultHandler HandlerFunc
	// Logger receives the client's logs. Nil means slog.Default().
	Logger *slog.Logger

	// MaxRetries is the default number of retries after the first attempt
	// for jobs whose task and enqueue set none. Nil means 3 (env
	// QUEUE_MAX_RETRIES); Ptr(0) means no retries. At most
	// MaxRetriesLimit.
	MaxRetries *int
	// RetryDelay is the default backoff base: attempt n waits
	// RetryDelay·2^(n−1) ±20%, capped at one hour. Zero means 60s.
	RetryDelay time.Duration

	// BusyTimeout is how long a statement waits for another connection's
	// write lock. Zero means 30s (env DB_BUSY_TIMEOUT, in ms).
	BusyTimeout time.Duration
	// CacheSize is SQLite's page cache per connection, in pages. Zero means
	// 10000 (env CACHE_SIZE).
	CacheSize int
	// MmapSize is SQLite's memory-mapped I/O size in bytes. Zero means
	// 256 MiB (env MMAP_SIZE); negative disables mmap.
	MmapSize int64
	// Durability is DurabilityNormal (default) or DurabilityFull.
	Durability Durability

	// Workers is how many jobs Run executes at once. Zero means 10.
	Workers int
	// ClaimBatch is how many jobs one claim statement may take. Zero means
	// 4×Workers (claims are write transactions: bigger ones cost less per
	// job), growing up to 50×Workers (at most 1,000) while the backlog is
	// deep and the workers run half a claim within 20ms, and shrinking
	// back when they do not: prefetch bounded by time, not count. A value
	// above Workers prefetches: the extra jobs wait in this process
	// (leases renewed, returned unspent on stop) for a free worker, which
	// raises throughput for short jobs at the cost of holding jobs other
	// processes could run. A non-zero value is used as is.
	ClaimBatch int
	// PollInterval is how often an idle Run checks whether another process
	// committed to a shard (a stat of each shard's WAL file, no SQL), so a
	// foreign enqueue is picked up within about this long; after 200ms of
	// quiet the check backs off to 4×PollInterval, after 2s to
	// 20×PollInterval (100ms by default). Zero means 5ms. Enqueues from
	// this process wake Run at once; on PostgreSQL, LISTEN/NOTIFY does
	// (its listener polls).
	PollInterval time.Duration
	// HeartbeatInterval is how often running jobs' heartbeats are renewed,
	// and how often Run refreshes its worker registry entry (at least
	// RegistryMinRefresh apart; see WorkerInfo). Zero means 5s (env
	// HEARTBEAT_INTERVAL, in ms).
	HeartbeatInterval time.Duration
	// StuckTimeout is how old a heartbeat must be before orphan recovery
	// takes the job back. Zero means 30s (env STUCK_TIMEOUT, in ms). It
	// must exceed HeartbeatInterval.
	StuckTimeout time.Duration
	// RecoveryInterval is how often Run recovers orphans. Zero means 10s
	// (env RECOVERY_INTERVAL, in ms).
	RecoveryInterval time.Duration
	// CleanupAge is how long failed and cancelled jobs, dead letters and
	// (at least) stored results are kept before Run's maintenance deletes
	// them. Zero means 7 days
	// (env CLEANUP_DAYS).
	CleanupAge time.Duration
	// CompletedRetention is how long completed jobs stay stored (status
	// completed, with their finish time, listed by Jobs, the CLI and the
	// admin API) before Run's maintenance deletes them. Zero means one
	// hour (each kept job costs about 100 bytes of file plus its payload,
	// and Stats and the dashboard's counts grow with the kept rows: see
	// README, Retention);
	// RetentionOff deletes a completed job without a result at once, as
	// queue-max does. A job whose handler returned a result is kept for the longer of this
	// and CleanupAge, so its result stays readable (env
	// QUEUE_MAX_COMPLETED_RETENTION, a Go duration or seconds, where 0
	// means off).
	CompletedRetention time.Duration
	// MaxSnoozes bounds how often one job may snooze (a handler returning
	// Snooze(d)): the next snooze dead-letters it with a SnoozeLimitError,
	// so a job cannot wait forever unnoticed. Zero means 100; negative is
	// an error.
	MaxSnoozes int
	// RequeueClearsSteps makes RetryJob and RequeueDead (the CLI's retry
	// and dlq requeue, the admin API's) clear the job steps a failed job
	// recorded (Step, Do, SetCursor), so that it runs again from its
	// first step. False, the default, keeps them: the job resumes after
	// its last completed step. RetryFailed always keeps them.
	RequeueClearsSteps bool
	// AlertThreshold raises an alert event while more than this many jobs
	// are pending. Zero means 1000; AlertOff (-1) switches alerts off and
	// any other negative value is a *ConfigError (env
	// QUEUE_ALERT_THRESHOLD, where 0 means off).
	AlertThreshold int
	// DrainTimeout is how long Run lets running jobs finish after its
	// context ends; then their contexts are cancelled and unfinished jobs
	// are returned to pending. Zero means 30s.
	DrainTimeout time.Duration
	// RateLimit caps how many jobs Run starts, shared by all its workers.
	// The zero Rate means no limit (env RATE_LIMIT_MAX sets it per minute;
	// 0 there means no limit too).
	RateLimit Rate
	// CircuitThreshold is how many consecutive dependency failures
	// (IsDependencyFailure: timeouts, connection errors, 5xx, RetryAfter,
	// Unavailable; never plain or Permanent errors) open a task's circuit
	// breaker, which the store keeps for every process (docs/breakers.md).
	// Zero means 5; CircuitOff (-1) switches the breakers off and
	// any other negative value is a *ConfigError (env
	// CIRCUIT_FAILURE_THRESHOLD, where 0 means off). A task can
	// switch its own off with TaskOptions.CircuitOff.
	CircuitThreshold int
	// CircuitTimeout is how long the breaker stays open before a probe,
	// and how long a process holds the probe before another may take it
	// (a process killed while it probes frees it then). Zero means 60s
	// (env CIRCUIT_TIMEOUT, in seconds).
	CircuitTimeout time.Duration
	// Queues gives named queues their own share of Workers, so that a
	// flood of one queue's jobs cannot take every worker: each queue runs
	// at most its MaxWorkers jobs at once, and the default queue (jobs
	// without a queue) the rest. Their sum must leave the default queue at
	// least one worker (of Autoscale.Min when autoscaling, where the
	// default queue's share grows and shrinks with the pool). A client with
	// Queues works only those queues and the default one; nil means one
	// pool of Workers for every queue.
	Queues map[string]QueueConfig
	// Autoscale, when set, varies the number of jobs Run executes at once
	// between Autoscale.Min and Autoscale.Max by the backlog; Workers is the
	// starting point.
	Autoscale *Autoscale
	// Hooks are callbacks around each job Run executes.
	Hooks Hooks
	// Middleware wrap enqueues (EnqueueMiddleware) and job execution
	// (WorkMiddleware), for tracing, metrics, logging or auth; see
	// JobMiddleware. The first entry is the outermost. Nil means none.
	Middleware []JobMiddleware
	// WorkerID names this process's claims in the worker_id column. Empty
	// means "<hostname>-<pid>".
	WorkerID string

	// now is the clock; nil means time.Now. Tests set it.
	now func() time.Time
	// strictNames keeps a test's handler-less client strict about task
	// names (tests only; see setup in client_test.go).
	strictNames bool
}

// MaxRetriesLimit is the largest number of retries a job may have (in
// Config.MaxRetries, TaskOptions.MaxRetries, Opts.MaxRetries and the
// retries= annotation); larger values are refused rather than wrapped.
const MaxRetriesLimit = enqueue.MaxRetriesLimit

// Defaults.
const (
	DefaultShards      = 6
	DefaultDir         = "./data"
	DefaultMaxRetries  = 3
	MaxPayloadBytes    = enqueue.MaxPayloadBytes
	MaxPayloadDepth    = enqueue.MaxPayloadDepth
	defaultRetryDelay  = 60 * time.Second
	defaultMaxSnoozes  = 100
	maxBackoff         = time.Hour
	defaultBusyTimeout = 30 * time.Second
	defaultCacheSize   = 10000
	defaultMmapSize    = 256 << 20
	defaultWorkers     = 10
	// defaultClaimFactor: a claim takes up to this many times Workers, the
	// extra jobs prefetched (claims are write transactions; bigger ones
	// cost less per job).
	defaultClaimFactor     = 4
	defaultPollInterval    = 5 * time.Millisecond
	defaultHeartbeat       = 5 * time.Second
	defaultStuckTimeout    = 30 * time.Second
	defaultRecovery        = 10 * time.Second
	defaultCleanupAge      = 7 * 24 * time.Hour
	defaultRetention       = time.Hour
	defaultAlertThreshold  = 1000
	defaultDrainTimeout    = 30 * time.Second
	defaultCircuitFailures = 5
	defaultCircuitTimeout  = 60 * time.Second
)

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	setDefault(&c.Dir, DefaultDir)
	setDefault(&c.Shards, DefaultShards)
	if c.MaxRetries == nil {
		c.MaxRetries = Ptr(DefaultMaxRetries)
	}
	setDefault(&c.RetryDelay, defaultRetryDelay)
	setDefault(&c.MaxSnoozes, defaultMaxSnoozes)
	setDefault(&c.BusyTimeout, defaultBusyTimeout)
	setDefault(&c.CacheSize, defaultCacheSize)
	setDefault(&c.MmapSize, defaultMmapSize)
	if c.MmapSize < 0 {
		c.MmapSize = 0
	}
	setDefault(&c.Workers, defaultWorkers)
	setDefault(&c.ClaimBatch, defaultClaimFactor*c.Workers)
	setDefault(&c.PollInterval, defaultPollInterval)
	setDefault(&c.HeartbeatInterval, defaultHeartbeat)
	setDefault(&c.StuckTimeout, defaultStuckTimeout)
	setDefault(&c.RecoveryInterval, defaultRecovery)
	setDefault(&c.CleanupAge, defaultCleanupAge)
	setDefault(&c.CompletedRetention, defaultRetention)
	setDefault(&c.AlertThreshold, defaultAlertThreshold)
	setDefault(&c.DrainTimeout, defaultDrainTimeout)
	setDefault(&c.CircuitThreshold, defaultCircuitFailures)
	setDefault(&c.CircuitTimeout, defaultCircuitTimeout)
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.now == nil {
		c.now = clock.Now // time.Now, unless a test skews this process's clock
	}
	return c
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// validate reports the first invalid field of a defaulted config.
func (c Config) validate() error {
	neg := "is negative"
	for _, f := range []struct {
		field string
		bad   bool
		msg   string
	}{
		{"Shards", c.Shards < 1 || c.Shards > shard.MaxShards, fmt.Sprintf("%d is out of range (want 1–%d)", c.Shards, shard.MaxShards)},
		{"MaxRetries", *c.MaxRetries < 0, fmt.Sprintf("%d is negative", *c.MaxRetries)},
		{"MaxRetries", *c.MaxRetries > MaxRetriesLimit, fmt.Sprintf("%d exceeds %d", *c.MaxRetries, MaxRetriesLimit)},
		{"RetryDelay", c.RetryDelay < 0, neg},
		{"MaxSnoozes", c.MaxSnoozes < 0, neg},
		{"BusyTimeout", c.BusyTimeout < 0, neg},
		{"Workers", c.Workers < 0, neg},
		{"ClaimBatch", c.ClaimBatch < 0, neg},
		{"PollInterval", c.PollInterval < 0, neg},
		{"HeartbeatInterval", c.HeartbeatInterval < 0, neg},
		{"StuckTimeout", c.StuckTimeout <= c.HeartbeatInterval, fmt.Sprintf("%s must exceed HeartbeatInterval (%s)", c.StuckTimeout, c.HeartbeatInterval)},
		{"RecoveryInterval", c.RecoveryInterval < 0, neg},
		{"CleanupAge", c.CleanupAge < 0, neg},
		{"CompletedRetention", c.CompletedRetention < 0 && c.CompletedRetention != RetentionOff, "is negative (RetentionOff keeps no completed job)"},
		{"AlertThreshold", c.AlertThreshold < 0 && c.AlertThreshold != AlertOff, fmt.Sprintf("%d is negative (AlertOff, -1, switches alerts off)", c.AlertThreshold)},
		{"CircuitThreshold", c.CircuitThreshold < 0 && c.CircuitThreshold != CircuitOff, fmt.Sprintf("%d is negative (CircuitOff, -1, switches the breakers off)", c.CircuitThreshold)},
		{"DrainTimeout", c.DrainTimeout < 0, neg},
		{"CircuitTimeout", c.CircuitTimeout < 0, neg},
		{"RateLimit", c.RateLimit.Limit < 0 || (c.RateLimit.Limit > 0 && c.RateLimit.Per <= 0), "needs Limit ≥ 0 and a positive Per"},
	} {
		if f.bad {
			return &ConfigError{f.field, f.msg}
		}
	}
	if err := c.checkQueues(); err != nil {
		return err
	}
	return checkMiddleware(c.Middleware)
}

// checkQueues validates Config.Queues against Workers (and Autoscale.Min,
// the fewest workers autoscaling may leave).
func (c Config) checkQueues() error {
	if len(c.Queues) == 0 {
		return nil
	}
	qs := make(map[string]int, len(c.Queues))
	for name, q := range c.Queues {
		qs[name] = q.MaxWorkers
	}
	workers, field := c.Workers, "Workers"
	if c.Autoscale != nil {
		workers, field = c.Autoscale.WithDefaults().Min, "Autoscale.Min"
	}
	if f, msg := admission.CheckQueues(qs, workers, field); f != "" {
		return &ConfigError{f, msg}
	}
	return nil
}
