// Package store defines the storage seam of queuemax: the Store interface that
// the engine drives, the job row types it returns, and the errors it reports.
// The SQLite implementation lives in runtime/store/sqlitestore; every
// implementation must pass the conformance suite in runtime/store/storetest.
//
// Not API: import github.com/queuemax/queuemax instead.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
)

// Errors returned by every Store implementation. The root package re-exports
// them, so callers test them with errors.Is against queuemax.ErrX.
var (
	// ErrLeaseLost is returned for a complete, fail, heartbeat or release
	// whose lease no longer holds: the job was recovered as an orphan, purged,
	// or claimed again by another worker. Nothing was changed.
	ErrLeaseLost = errors.New("queuemax: job lease lost (job was recovered, purged or re-claimed)")
	// ErrJobNotFound is returned when a job ID names no stored job.
	ErrJobNotFound = errors.New("queuemax: job not found")
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("queuemax: queue closed")
	// ErrShardMismatch is returned by Open when the data directory holds a
	// different number of shard files than configured.
	ErrShardMismatch = errors.New("queuemax: shard count does not match data directory")
	// ErrNotDatabase is returned by Open when a shard file is not an SQLite
	// database.
	ErrNotDatabase = errors.New("queuemax: shard file is not a database")
	// ErrReadOnly is returned by every write to a store opened read-only.
	ErrReadOnly = errors.New("queuemax: opened read-only")
	// ErrInvalidShard is returned when a shard index is out of range.
	ErrInvalidShard = errors.New("queuemax: shard index out of range")
	// ErrJobFinished is returned by Cancel for a job that already ended
	// (completed, failed or cancelled); the error names its status.
	ErrJobFinished = errors.New("queuemax: job already finished")
	// ErrCancelRequested is returned by Heartbeat, per item, for a lease
	// that was renewed but whose job has been asked to cancel (Cancel on
	// a processing job): the worker should stop the handler and end the
	// job with FailParams.Cancelled.
	ErrCancelRequested = errors.New("queuemax: job cancellation requested")
	// ErrUnsupported is returned (wrapped) by the methods of an optional
	// capability the store lacks (see Features).
	ErrUnsupported = errors.New("queuemax: the store does not support this")
)

// AllShards selects every shard in calls that take a shard index.
const AllShards = -1

// Store is the storage seam: everything the engine does to durable state goes
// through it. Implementations are safe for concurrent use. Operations that
// take a batch apply it in one transaction per shard; operations that take
// one item may be grouped with concurrent callers into a shared transaction
// (group commit) and return only once that transaction has committed.
type Store interface {
	// Shards returns the number of shards.
	Shards() int
	// ReadOnly reports whether the store was opened read-only: every
	// write then returns ErrReadOnly.
	ReadOnly() bool
	// Insert stores jobs and returns their IDs in input order. Jobs are
	// routed by Shard (each InsertParams has Shard already resolved). A
	// single job joins a group commit with concurrent inserts to its shard.
	// A batch is all or nothing: if Insert returns an error no job of the
	// batch was ever claimable and none stays stored (what a failure leaves
	// behind is invisible and removed by recovery), and no job of a batch
	// is claimable before every job of it is stored, even when the batch
	// spans shards and the producer dies half-way. A job with Unique set
	// that duplicates a stored one is not inserted: its place holds the
	// stored job's ID and Unique.Duplicate is set (not an error).
	Insert(ctx context.Context, jobs []InsertParams) ([]JobID, error)
	// Claim claims up to p.Max ready jobs for p.WorkerID, visiting shards in
	// p.Order (or a random order when nil). Each claim is one atomic
	// statement per shard; claimed jobs get status processing, attempts+1, a
	// heartbeat and a fresh lease token.
	Claim(ctx context.Context, p ClaimParams) ([]*Job, error)
	// Complete records successful jobs. It returns one error per item:
	// nil, ErrLeaseLost, or the storage error that failed the transaction.
	Complete(ctx context.Context, acks []CompleteParams) []error
	// Fail records failed executions: a retry at RetryAt, or the
	// dead-letter queue when Dead is set. One error per item, as Complete.
	Fail(ctx context.Context, fails []FailParams) []error
	// Heartbeat renews the heartbeat of running jobs. One error per item:
	// nil, ErrLeaseLost, ErrCancelRequested (renewed, but Cancel was
	// called for the job) or a storage error.
	Heartbeat(ctx context.Context, leases []Lease, now time.Time) []error
	// Release returns running jobs to pending without spending an attempt
	// (used when a worker stops before finishing them); a job with a
	// cancel request becomes cancelled instead. One error per item.
	Release(ctx context.Context, leases []Lease) []error
	// Cancel cancels one job atomically. A pending or scheduled job becomes
	// cancelled at once (the result is StatusCancelled); a processing job
	// gets a cancel request that Heartbeat reports to its worker (the
	// result is StatusProcessing), and a retry, release or orphan recovery
	// of it ends it cancelled instead of running it again. A finished job
	// is an error wrapping ErrJobFinished; an unknown ID, ErrJobNotFound.
	Cancel(ctx context.Context, id JobID, now time.Time) (Status, error)

	// RecoverOrphans returns processing jobs whose heartbeat is older than
	// stuckBefore to pending; a job that has used all its attempts goes to
	// the dead-letter queue instead, and one with a cancel request becomes
	// cancelled (counted in neither). It returns how many of each. It also
	// finishes or removes batches a dead producer left half-inserted.
	RecoverOrphans(ctx context.Context, stuckBefore, now time.Time) (RecoverResult, error)
	// RetryFailed re-queues failed jobs of one shard (or AllShards) with a
	// fresh attempt budget and removes their dead-letter rows.
	RetryFailed(ctx context.Context, shard int, now time.Time) (int, error)
	// RetryJob re-queues one failed job. It returns ErrJobNotFound if no
	// failed job has that ID.
	RetryJob(ctx context.Context, id JobID, now time.Time) error
	// RequeueDead re-queues the job behind dead-letter row dlqID of shard
	// with a fresh attempt budget and deletes the dead-letter row. If the
	// job's queue row was cleaned up it is re-created from the dead letter,
	// with p's priority and max attempts for its task. It returns the
	// job's ID.
	RequeueDead(ctx context.Context, shard int, dlqID int64, p RequeueParams) (JobID, error)
	// Cleanup deletes failed, completed and cancelled jobs that finished before cutoff,
	// and dead-letter rows written before it.
	Cleanup(ctx context.Context, cutoff time.Time) (CleanupResult, error)
	// Prune is Cleanup with one cutoff for completed jobs and another for
	// failed and cancelled ones and dead letters (completed-job retention
	// is usually shorter than the failed-job one). Cleanup(c) is
	// Prune(PruneParams{CompletedBefore: c, FinishedBefore: c}).
	Prune(ctx context.Context, p PruneParams) (CleanupResult, error)
	// Purge deletes jobs with one of the given statuses (all jobs when
	// statuses is empty). Processing jobs are only deleted when listed
	// explicitly.
	Purge(ctx context.Context, statuses []Status) (int, error)

	// Job returns one job.
	Job(ctx context.Context, id JobID) (*Job, error)
	// Jobs lists jobs matching p, newest first.
	Jobs(ctx context.Context, p ListParams) ([]*Job, error)
	// DeadLetters lists dead-letter rows, newest first.
	DeadLetters(ctx context.Context, p ListParams) ([]*DeadLetter, error)
	// Stats returns per-shard counts. It reads indexes, never the payloads.
	Stats(ctx context.Context) ([]ShardStats, error)
	// TaskCounts returns job counts per status for one task name.
	TaskCounts(ctx context.Context, task string) (map[Status]int64, error)
	// JobCounts counts every shard's jobs by task and status in one pass,
	// plus one row per (shard, task) with Status "" counting its
	// dead-letter rows (see JobCount). Counts of zero are left out. It may
	// read every job row's task and status (never the payloads): callers
	// cache it (the dashboard's task table, the metrics collectors).
	JobCounts(ctx context.Context) ([]JobCount, error)
	// TaskBacklog returns, per task name ("" for jobs without one), how
	// many jobs are pending (ready) and scheduled (waiting for a run-at or
	// retry time), over every shard. Tasks with neither are left out. It
	// reads only waiting jobs (the claim and due indexes), so it is cheaper
	// than JobCounts on a queue that keeps finished jobs.
	TaskBacklog(ctx context.Context) (map[string]TaskBacklog, error)
	// WaitingCount returns how many jobs are pending or scheduled over
	// every shard, by index, for alert checks.
	WaitingCount(ctx context.Context) (int64, error)
	// CreatedAt returns when the queue was created, or the zero time if
	// the store does not know (a queue-max file that never recorded it).
	CreatedAt(ctx context.Context) (time.Time, error)
	// HasWork reports whether any job is pending, scheduled or processing.
	HasWork(ctx context.Context) (bool, error)
	// NextDue returns the earliest time a scheduled job becomes due, and
	// false if none is scheduled.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// DataVersion returns a number that changes whenever any connection
	// (in this process or another) commits a change to any shard. Workers
	// poll it cheaply to wake up on other processes' enqueues.
	DataVersion(ctx context.Context) (int64, error)

	// PeriodicRegister records a periodic task's schedule. A new task, or
	// one whose schedule or misfire policy changed, gets p.Next as its next
	// run; otherwise the stored next run is kept, so a restart neither
	// skips nor repeats a slot.
	PeriodicRegister(ctx context.Context, p PeriodicParams) error
	// PeriodicList returns every registered periodic task.
	PeriodicList(ctx context.Context) ([]PeriodicState, error)
	// PeriodicFire atomically claims slot p.Slot of p.Task — only while the
	// stored next run still equals p.Due — records it under the unique key
	// (task, slot), inserts p.Job (when p.Slot is not zero) and moves the
	// next run to p.Next, in one transaction. It returns fired=false,
	// changing nothing, when another scheduler got there first.
	PeriodicFire(ctx context.Context, p PeriodicFireParams) (id JobID, fired bool, err error)

	// WorkerPut inserts or refreshes one process's entry in the worker
	// registry (the live processes that run jobs). The entry is live until
	// r.ExpiresAt; a refresh moves that forward.
	WorkerPut(ctx context.Context, r WorkerRecord) error
	// WorkerDelete removes a process's entry (a clean stop). Deleting an
	// unknown ID is not an error.
	WorkerDelete(ctx context.Context, id string) error
	// WorkerList returns the entries still live at now (ExpiresAt after
	// now), ordered by ID. Expired entries are never returned; a writable
	// store may delete them.
	WorkerList(ctx context.Context, now time.Time) ([]WorkerRecord, error)

	// TaskCatalogPut inserts or replaces task catalogue records by name
	// (see TaskRecord), all in one transaction. Info must be a JSON object.
	TaskCatalogPut(ctx context.Context, recs []TaskRecord) error
	// TaskCatalog returns every task catalogue record, ordered by name
	// (none for a store that never recorded one).
	TaskCatalog(ctx context.Context) ([]TaskRecord, error)
	// TaskRename gives the waiting jobs (pending and scheduled) stored
	// under task name from the name to instead, over every shard (one
	// transaction per shard), and returns how many it renamed. Jobs that
	// run or ended keep their name. It is how a renamed task's old jobs
	// stay runnable; renaming no job is not an error.
	TaskRename(ctx context.Context, from, to string) (int64, error)

	// QueueAdmin pauses, resumes and lists named queues.
	QueueAdmin
	// BreakerStore keeps the tasks' circuit breakers (breakers.go).
	BreakerStore
	// Limiter holds global and queue limits (limits.go).
	Limiter
	// KeyClaimer claims per-key limited tasks (limits_key.go).
	KeyClaimer
	// WorkflowStore runs workflows (workflow.go).
	WorkflowStore

	// Features says which optional capabilities the store has. The
	// methods below of one it lacks return an error wrapping
	// ErrUnsupported; callers ask Features first, never by a type
	// assertion.
	Features() Features
	// InsertTx inserts jobs inside a transaction the application owns, so
	// that they exist if and only if it commits (Features.Tx). tx is the
	// store's own transaction type (for PostgreSQL a pgx.Tx, or a *sql.Tx
	// opened with the pgx stdlib driver); any other value is an error
	// naming the type.
	InsertTx(ctx context.Context, tx any, jobs []InsertParams) ([]JobID, error)
	// InsertWorkflowTx is InsertWorkflow inside the application's
	// transaction tx (Features.Tx).
	InsertWorkflowTx(ctx context.Context, tx any, p *WorkflowParams) (int64, []JobID, error)
	// Changes returns a channel closed at the next change DataVersion
	// would report, for a store that learns of other processes' commits
	// by notification (Features.Notify: PostgreSQL's LISTEN/NOTIFY);
	// idle workers wait on it as well as polling DataVersion. Nil
	// without Features.Notify.
	Changes() <-chan struct{}
	// Now returns the database clock's current time, for a store whose
	// clock decides times for every host (Features.Clock).
	Now(ctx context.Context) (time.Time, error)

	// JobProgress records the progress of job steps (progress.go).
	JobProgress

	// Close releases every resource. Later calls return ErrClosed.
	Close() error
}

// WorkerRecord is one process's entry in the worker registry. The store
// keeps Info as an opaque JSON object: the root package defines its shape
// (host, pid, tasks handled, concurrency, breaker states, rate limits).
type WorkerRecord struct {
	ID        string
	Info      json.RawMessage
	StartedAt time.Time
	UpdatedAt time.Time // when this refresh was written (the caller's Now)
	ExpiresAt time.Time
}

// Features lists a store's optional capabilities (Store.Features).
type Features struct {
	// Tx: InsertTx and InsertWorkflowTx join an application's
	// transaction.
	Tx bool
	// Notify: Changes reports other processes' commits.
	Notify bool
	// Clock: Now reads the database's clock, which decides leases,
	// retry and run-at times and periodic slots for every host.
	Clock bool
}

// PeriodicParams registers one periodic task.
type PeriodicParams struct {
	Task     string
	Schedule string // the spec, e.g. "@every 1h0m0s" or "0 3 * * *"
	Misfire  string // "skip" or "catch_up"
	Next     time.Time
	Now      time.Time
}

// PeriodicState is a periodic task as stored.
type PeriodicState struct {
	Task      string
	Schedule  string
	Misfire   string
	NextRun   time.Time
	LastRun   time.Time // zero if it never fired
	LastJobID JobID
}

// PeriodicFireParams fires (or skips) one slot of a periodic task.
type PeriodicFireParams struct {
	Task string
	Due  time.Time // the next run the caller read; the compare-and-swap key
	Slot time.Time // the slot to enqueue; zero skips the due slots without a job
	Next time.Time // the new next run
	Job  InsertParams
}

// InsertParams describes one job to insert. Payload must already be a
// validated JSON object.
type InsertParams struct {
	Shard        int
	Task         string
	Payload      json.RawMessage
	PartitionKey *int64
	Priority     Priority
	MaxAttempts  int
	RetryDelay   time.Duration // stored as the row's retry_delay, in seconds
	RunAt        time.Time     // zero or not after Now: ready at once
	// Metadata is an optional JSON object stored with the job (trace
	// context, user metadata); nil stores none.
	Metadata json.RawMessage
	// Timeout, when positive, bounds each execution of this job instead of
	// its task's timeout (stored, so any process running it applies it).
	Timeout time.Duration
	// Tags are stored with the job and can be filtered on (ListParams.Tag);
	// already validated by the caller. Nil stores none.
	Tags []string
	// Queue is the job's named queue (a valid name); "" stores
	// DefaultQueue.
	Queue string
	Now   time.Time
	// Unique, when not nil, makes the insert conditional: see UniqueParams.
	Unique *UniqueParams
}

// UniqueParams makes one insert unique. The store inserts the job only if
// no stored job has the same Key and a status among its own counted
// statuses; otherwise it inserts nothing, returns that job's ID in the
// job's place and sets Duplicate. The decision is the store's unique
// index (key, where the status is counted), so it holds across processes
// and concurrent inserts, and a job frees its key when it moves to a
// status that is not counted (or is deleted). A duplicate is not an
// error: the other jobs of the batch are stored. On a sharded store every
// job with one Key must be routed to one shard (the caller hashes it).
type UniqueParams struct {
	// Key identifies the job among the store's jobs (the root package
	// hashes task, arguments or user key, partition key and period).
	Key string
	// States are the statuses that count. They must include pending,
	// scheduled and processing (moves between those never free the key,
	// so they never collide); completed, failed and cancelled are
	// optional.
	States []Status
	// Duplicate is written by Insert (and InsertTx): true when the job was
	// not inserted because the job whose ID was returned holds Key.
	Duplicate bool
}

// RequeueParams says how RequeueDead re-creates a job whose queue row is
// gone: Defaults are the priority and max attempts of each task (the
// store does not know the tasks' settings), Fallback those of a task not
// listed (DefaultsOf).
type RequeueParams struct {
	Defaults map[string]TaskDefaults
	Fallback TaskDefaults
	Now      time.Time
	// ClearProgress clears the job steps' recorded progress of the job
	// re-queued (JobProgress), so that it runs from its first step; a
	// re-created job has none either way.
	ClearProgress bool
}

// ClaimParams selects jobs to claim.
type ClaimParams struct {
	WorkerID string
	Max      int
	Now      time.Time
	// Order lists shards to visit; nil means a fresh random order.
	Order []int
	// Tasks, when not empty, restricts claims to these task names; ""
	// matches jobs stored without a task (queue-max's).
	Tasks []string
	// Queues, when not nil, restricts claims to these queues, at most
	// Max jobs of each over the whole Claim, every shard together (and
	// p.Max in all); an entry with Max 0 claims none. Nil claims every
	// queue. Paused queues are always skipped.
	Queues []QueueLimit
	// SkipQueues, when Queues is nil, leaves these queues' jobs out of
	// the claim, like paused ones (the queues whose limits a claim round
	// claims apart; see QueueScope). Ignored when Queues is set.
	SkipQueues []string
}

// Lease identifies one claim of one job.
type Lease struct {
	ID    JobID
	Token int64
	// WorkerID, when not empty, must also still own the job. queue-max
	// claims rows without touching the lease token, so a job it re-claimed
	// keeps our old token: only the worker column tells the claims apart.
	WorkerID string
}

// CompleteParams acknowledges one successful execution.
type CompleteParams struct {
	Lease
	Result json.RawMessage // nil: the row is deleted (unless Keep); otherwise kept as completed
	// Keep keeps the row as completed even without a Result, for
	// completed-job retention (Prune deletes it later).
	Keep bool
	Now  time.Time
}

// FailParams records one failed execution.
type FailParams struct {
	Lease
	Error     string
	ErrorType string
	Stack     string
	Dead      bool // no retry: mark failed and copy to the dead-letter queue
	Cancelled bool // no retry: mark cancelled (not dead-lettered, not counted failed); wins over Dead
	// Snooze, with !Dead, runs the job again at RetryAt without spending
	// the attempt: attempts go back down by one and snoozes up by one.
	Snooze  bool
	RetryAt time.Time // when !Dead: not eligible before this time
	Now     time.Time
}

// RecoverResult counts what RecoverOrphans did.
type RecoverResult = queuemaxtype.RecoverResult

// CleanupResult counts what Cleanup deleted.
type CleanupResult = queuemaxtype.CleanupResult

// ListParams filters listings. Zero fields do not filter.
type ListParams struct {
	Shard  int // one shard index, or AllShards (-1) for every shard
	Status Status
	// Statuses, when set, selects jobs with any of these statuses (and
	// Status, when it is set too), in one read per shard.
	Statuses []Status
	Task     string
	// Tag, when set, selects jobs stored with this tag (InsertParams.Tags).
	Tag   string
	Limit int // 0 means 100
}

// StatusSet returns the statuses p selects: Statuses and Status, without
// repeats; none selects every status.
func (p ListParams) StatusSet() []Status {
	if len(p.Statuses) == 0 {
		if p.Status == "" {
			return nil
		}
		return []Status{p.Status}
	}
	set := make([]Status, 0, len(p.Statuses)+1)
	for _, st := range append(p.Statuses, p.Status) {
		if st != "" && !slices.Contains(set, st) {
			set = append(set, st)
		}
	}
	return set
}

// MaxRows returns how many rows a listing returns at most: Limit, or 100
// when Limit is not positive.
func (p ListParams) MaxRows() int {
	if p.Limit <= 0 {
		return 100
	}
	return p.Limit
}

// PruneParams says what Prune deletes. A zero time deletes nothing of
// that kind.
type PruneParams struct {
	// CompletedBefore: completed jobs that finished before it.
	CompletedBefore time.Time
	// KeepResultsAfter, when set, keeps the completed jobs of
	// CompletedBefore that stored a result and finished at or after it
	// (results outlive a short retention).
	KeepResultsAfter time.Time
	// FinishedBefore: failed and cancelled jobs that finished before it,
	// and dead-letter rows written before it.
	FinishedBefore time.Time
}

// ShardStats holds one shard's counts.
type ShardStats = queuemaxtype.ShardStats

// EncodeTags returns tags as the JSON array both stores keep in their tags
// column, or "" for none.
func EncodeTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

// DecodeTags reads a tags column written by EncodeTags; nil for "" or a
// value that is not an array of strings.
func DecodeTags(s string) []string {
	if s == "" {
		return nil
	}
	var tags []string
	if json.Unmarshal([]byte(s), &tags) != nil || len(tags) == 0 {
		return nil
	}
	return tags
}

// TaskDefaults are the priority and max attempts a new job of a task gets
// when nothing overrides them.
type TaskDefaults struct {
	Priority    Priority
	MaxAttempts int
}

// DefaultsOf returns the priority and max attempts of a re-created job of
// task: its Defaults, or Fallback.
func (p RequeueParams) DefaultsOf(task string) (Priority, int) {
	d, ok := p.Defaults[task]
	if !ok {
		d = p.Fallback
	}
	return d.Priority, d.MaxAttempts
}
