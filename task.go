package queuemax

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/queuemax/queuemax/runtime/enqueue"
)

// Task is a typed handle on one task: it enqueues jobs whose payload is A,
// encoded as a JSON object. Generated code embeds a Task in each task's stub
// type (SendEmailTask) and adds methods that take the function's own
// parameters. A Task is a small value; copies share the Client. The zero
// Task is not bound to a client and returns ErrNotBound.
type Task[A any] struct {
	c    *Client
	name string
	def  TaskOptions
	opts Opts
	// check is DecodeArgs into A: the decode Define's workers run.
	check func(json.RawMessage) error
}

// EnqueueParams describes one job for EnqueueMany.
type EnqueueParams struct {
	// Task is the task name: one of the client's handlers or a task of
	// the store's task catalogue, by its full name, an alias or a short
	// one (SendEmail) that matches exactly one; other names are
	// ErrUnknownTask unless Opts.AllowUnknownTask or
	// Config.AllowUnknownTasks is set (see Client.Enqueue).
	Task string
	// Payload is JSON-encoded and must encode to an object: a struct, a
	// map, or a json.RawMessage holding an object.
	Payload any
	// Opts overrides the task's defaults.
	Opts Opts

	defaults *TaskOptions
	// validate is a typed handle's payload check (DecodeArgs into its
	// type), used when no handler of the task is registered here; args
	// is that type.
	validate func(json.RawMessage) error
	args     reflect.Type
}

// Tx is an application's own database transaction, passed to the …Tx
// enqueue methods (Client.EnqueueTx, Task.EnqueueTx, the generated
// DelayTx, ScheduleAtTx, MapTx, …) so that the jobs are written in it.
//
// With the PostgreSQL store (queuemaxpg) it is either a pgx.Tx (from
// pgx.Conn.Begin or pgxpool.Pool.Begin, github.com/jackc/pgx/v5) or a
// *sql.Tx of database/sql opened with pgx's stdlib driver (sql.Open("pgx",
// dsn) or stdlib.OpenDBFromPool). The transaction must be on the database
// the store opened. Any other value is an error naming its type.
//
// Tx is an alias of any so that the code calling these methods, generated
// stubs included, does not import a database driver; the store checks the
// type at run time.
type Tx = any

// NewTask returns the handle for task name on c with the task's defaults.
func NewTask[A any](c *Client, name string, defaults TaskOptions) Task[A] {
	return Task[A]{c: c, name: name, def: defaults, check: validator[A](name)}
}

// Name returns the task name stored in each job row.
func (t Task[A]) Name() string { return t.name }

// Client returns the client the handle is bound to, or nil.
func (t Task[A]) Client() *Client { return t.c }

// With returns a copy of t whose enqueues use o on top of earlier overrides.
func (t Task[A]) With(o Opts) Task[A] {
	t.opts = t.opts.merge(o)
	return t
}

// Enqueue stores one job with payload args and returns its ID. The job is
// durable once Enqueue returns nil; Enqueue does not wait for it to run.
// It is safe for concurrent use; concurrent enqueues to one shard share a
// transaction (group commit).
func (t Task[A]) Enqueue(ctx context.Context, args A) (JobID, error) {
	if t.c == nil {
		return 0, ErrNotBound
	}
	return t.c.enqueueOne(ctx, t.params(args))
}

// params is the enqueue of one job of args.
func (t Task[A]) params(args A) EnqueueParams {
	return EnqueueParams{Task: t.name, Payload: args, Opts: t.opts, defaults: &t.def, validate: t.check, args: reflect.TypeFor[A]()}
}

// EnqueueAt stores one job that becomes ready at at.
func (t Task[A]) EnqueueAt(ctx context.Context, at time.Time, args A) (JobID, error) {
	return t.With(Opts{RunAt: at}).Enqueue(ctx, args)
}

// EnqueueIn stores one job that becomes ready after d.
func (t Task[A]) EnqueueIn(ctx context.Context, d time.Duration, args A) (JobID, error) {
	if t.c == nil {
		return 0, ErrNotBound
	}
	return t.EnqueueAt(ctx, t.c.now().Add(d), args)
}

// EnqueueMany stores one job per element of args, in one transaction per
// shard, and returns their IDs in order. If any payload is invalid nothing
// is stored.
func (t Task[A]) EnqueueMany(ctx context.Context, args []A) ([]JobID, error) {
	if t.c == nil {
		return nil, ErrNotBound
	}
	params := make([]EnqueueParams, len(args))
	for i, a := range args {
		params[i] = t.params(a)
	}
	return t.c.EnqueueMany(ctx, params)
}

// EnqueueTx stores one job with payload args inside tx, the application's
// open transaction: the job exists if and only if tx commits. See
// Client.EnqueueTx for the transaction types, wake-up and errors; on the
// SQLite store it returns ErrTxUnsupported.
func (t Task[A]) EnqueueTx(ctx context.Context, tx Tx, args A) (JobID, error) {
	if t.c == nil {
		return 0, ErrNotBound
	}
	ids, err := t.c.enqueueTx(ctx, tx, []EnqueueParams{t.params(args)}, false)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueAtTx stores one job inside tx that becomes ready at at.
func (t Task[A]) EnqueueAtTx(ctx context.Context, tx Tx, at time.Time, args A) (JobID, error) {
	return t.With(Opts{RunAt: at}).EnqueueTx(ctx, tx, args)
}

// EnqueueInTx stores one job inside tx that becomes ready after d, counted
// from this call (not from the commit).
func (t Task[A]) EnqueueInTx(ctx context.Context, tx Tx, d time.Duration, args A) (JobID, error) {
	if t.c == nil {
		return 0, ErrNotBound
	}
	return t.EnqueueAtTx(ctx, tx, t.c.now().Add(d), args)
}

// EnqueueManyTx stores one job per element of args inside tx and returns
// their IDs in order; they exist if and only if tx commits. If any payload
// is invalid nothing is written to tx.
func (t Task[A]) EnqueueManyTx(ctx context.Context, tx Tx, args []A) ([]JobID, error) {
	if t.c == nil {
		return nil, ErrNotBound
	}
	params := make([]EnqueueParams, len(args))
	for i, a := range args {
		params[i] = t.params(a)
	}
	return t.c.enqueueTx(ctx, tx, params, true)
}

// Stats returns the counts of this task's jobs by status.
func (t Task[A]) Stats(ctx context.Context) (TaskStats, error) {
	if t.c == nil {
		return TaskStats{}, ErrNotBound
	}
	return t.c.TaskStats(ctx, t.name)
}

// TaskStats returns the counts of one task's jobs by status.
func (c *Client) TaskStats(ctx context.Context, task string) (TaskStats, error) {
	m, err := c.st.TaskCounts(ctx, task)
	if err != nil {
		return TaskStats{}, err
	}
	return TaskStats{Name: task, Pending: m[StatusPending], Scheduled: m[StatusScheduled],
		Processing: m[StatusProcessing], Failed: m[StatusFailed], Completed: m[StatusCompleted]}, nil
}

// TaskStats counts one task's stored jobs by status.
type TaskStats struct {
	Name       string `json:"name"`
	Pending    int64  `json:"pending"`
	Scheduled  int64  `json:"scheduled"`
	Processing int64  `json:"processing"`
	Failed     int64  `json:"failed"`
	Completed  int64  `json:"completed"`
}

// validator returns a Handler.Validate that decodes into A with DecodeArgs.
func validator[A any](name string) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		var a A
		return DecodeArgs(name, raw, &a)
	}
}

// Define returns the Handler for a task whose function takes args A and
// returns only an error. The payload is decoded into A with DecodeArgs; a
// payload that does not fit (a key A lacks, a missing parameter, a wrong
// type) dead-letters the job at once with a *PayloadShapeError.
func Define[A any](name string, o TaskOptions, fn func(context.Context, A) error) Handler {
	check := validator[A](name)
	return Handler{Name: name, Options: o, Validate: check, check: check, args: reflect.TypeFor[A](), Func: func(ctx context.Context, job *Job) (any, error) {
		var a A
		if err := DecodeArgs(name, job.Payload, &a); err != nil {
			return nil, Permanent(err)
		}
		return nil, fn(ctx, a)
	}}
}

// DefineResult returns the Handler for a task whose function returns a
// result R, which is stored with the completed job (see Result).
func DefineResult[A, R any](name string, o TaskOptions, fn func(context.Context, A) (R, error)) Handler {
	check := validator[A](name)
	return Handler{Name: name, Options: o, Validate: check, check: check, args: reflect.TypeFor[A](), Func: func(ctx context.Context, job *Job) (any, error) {
		var a A
		if err := DecodeArgs(name, job.Payload, &a); err != nil {
			return nil, Permanent(err)
		}
		r, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return r, nil
	}}
}

// Call runs fn synchronously on args after a round trip through the same
// JSON codec the queue uses, so that what works with Call works in a worker.
// o.Timeout, when set, bounds ctx.
func Call[A any](ctx context.Context, o TaskOptions, fn func(context.Context, A) error, args A) error {
	_, err := CallResult(ctx, o, func(ctx context.Context, a A) (struct{}, error) { return struct{}{}, fn(ctx, a) }, args)
	return err
}

// CallResult is Call for a task that returns a result; the result makes the
// same round trip through JSON.
func CallResult[A, R any](ctx context.Context, o TaskOptions, fn func(context.Context, A) (R, error), args A) (R, error) {
	var zero R
	raw, err := enqueue.EncodePayload(args)
	if err != nil {
		return zero, err
	}
	var a A
	if err := DecodeArgs("(Call)", raw, &a); err != nil {
		return zero, err
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	r, err := fn(ctx, a)
	if err != nil {
		return zero, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return zero, fmt.Errorf("queuemax: encode result: %w", err)
	}
	var out R
	if err := json.Unmarshal(b, &out); err != nil {
		return zero, fmt.Errorf("queuemax: decode result: %w", err)
	}
	return out, nil
}

// Result decodes the stored result of a completed job into R. It returns
// ErrNoResult while the job has not completed, and ErrJobNotFound once the
// job is gone.
func Result[R any](ctx context.Context, c *Client, id JobID) (R, error) {
	var r R
	if c == nil {
		return r, ErrNotBound
	}
	raw, err := c.Result(ctx, id)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("queuemax: decode result of job %d: %w", id, err)
	}
	return r, nil
}
