package queuemaxtype

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// JobMiddleware is one entry of the client's Config.Middleware: a value
// that implements EnqueueMiddleware, WorkMiddleware, or both (as a tracing
// middleware does, which writes trace context on enqueue and reads it on
// execution). Open fails with a *ConfigError for an entry that implements
// neither.
//
// Middleware run in list order: the first entry is the outermost, so it
// sees a job first and its outcome last. River's JobInsertMiddleware and
// WorkerMiddleware are the model. (The root package's net/http Middleware
// function is unrelated: it puts a Client into request contexts.)
type JobMiddleware any

// EnqueueMiddleware wraps every insert of new jobs: Enqueue, EnqueueMany,
// EnqueueFile, task handles, and the jobs the periodic scheduler enqueues.
// Re-queueing an existing job (RetryJob, RetryFailed, RequeueDead) is not
// an insert and does not pass through it.
type EnqueueMiddleware interface {
	// InsertMany is called with the validated jobs about to be inserted.
	// It may modify them (their Metadata in particular) and must call next
	// to insert them, or return an error to insert none. next returns the
	// jobs' IDs in order once they are committed. For a periodic slot that
	// another scheduler fired first, next returns no IDs and no error.
	InsertMany(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]JobID, error)) ([]JobID, error)
}

// WorkMiddleware wraps each execution of a job's handler (one claim of the
// job, by Run or Client.Work; in-process retries from TaskOptions.RetryOn
// happen inside next). It runs on the job's goroutine with the job's
// context.
type WorkMiddleware interface {
	// Work must call next to run the handler and return its result and
	// error, which it may change (an error it returns is recorded as the
	// job's failure). job must not be modified. A panic in Work is
	// recovered and fails the attempt, as a handler's panic does.
	Work(ctx context.Context, job *Job, next func(ctx context.Context) (any, error)) (any, error)
}

// EnqueueMiddlewareFunc adapts a function to an EnqueueMiddleware.
type EnqueueMiddlewareFunc func(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]JobID, error)) ([]JobID, error)

// InsertMany calls f.
func (f EnqueueMiddlewareFunc) InsertMany(ctx context.Context, jobs []*InsertJob, next func(ctx context.Context) ([]JobID, error)) ([]JobID, error) {
	return f(ctx, jobs, next)
}

// WorkMiddlewareFunc adapts a function to a WorkMiddleware.
type WorkMiddlewareFunc func(ctx context.Context, job *Job, next func(ctx context.Context) (any, error)) (any, error)

// Work calls f.
func (f WorkMiddlewareFunc) Work(ctx context.Context, job *Job, next func(ctx context.Context) (any, error)) (any, error) {
	return f(ctx, job, next)
}

// InsertJob is one job on its way into the store, as EnqueueMiddleware
// sees it: the task's defaults and the enqueue's Opts already resolved.
// Changes a middleware makes are validated again before the insert, with
// the same errors as Enqueue's.
type InsertJob struct {
	Task        string
	Payload     json.RawMessage // a JSON object
	Priority    Priority
	MaxAttempts int       // retries + 1
	RunAt       time.Time // zero: ready at once
	Key         *int64    // the partition key; nil: a random shard
	// Metadata is a JSON object stored with the job and returned as
	// Job.Metadata (to a WorkMiddleware, for example); nil stores none.
	Metadata json.RawMessage
}

// SetMetadata sets key to value (JSON-encoded) in j.Metadata, creating
// the object if needed and keeping its other keys.
func (j *InsertJob) SetMetadata(key string, value any) error {
	m := map[string]json.RawMessage{}
	if len(j.Metadata) > 0 {
		if err := json.Unmarshal(j.Metadata, &m); err != nil {
			return fmt.Errorf("queuemax: job metadata is not a JSON object: %w", err)
		}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("queuemax: metadata %q: %w", key, err)
	}
	m[key] = v
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	j.Metadata = b
	return nil
}

// Hooks are optional callbacks around each job a client executes (Run's
// workers and Client.Work). OnStart and OnError run on the goroutine that
// runs the job; OnComplete (and EventCompleted events) run once the success
// has committed, under Run on the engine's acknowledgement goroutine, which
// commits the successes of many jobs at once: keep them short, they delay
// later acknowledgements. A panicking hook is recovered and logged. Hooks
// are the simple form of a WorkMiddleware: OnStart runs before the
// middleware chain, and OnComplete and OnError run after the outcome has
// been recorded, which a middleware, returning before that, cannot see.
// Manual acknowledgements (Client.Complete, Client.Fail) run no hooks.
type Hooks struct {
	// OnStart runs before the handler.
	OnStart func(ctx context.Context, job *Job)
	// OnComplete runs after a success has been committed.
	OnComplete func(ctx context.Context, job *Job, result any)
	// OnError runs after a failure that will be retried or was
	// dead-lettered has been recorded (not after a snooze or a
	// cancellation).
	OnError func(ctx context.Context, job *Job, err error, out FailOutcome)
}
