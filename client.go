package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// Client is an open queue: a data directory of shard files, the handlers
// that run its tasks, and (while Run is active) the workers. It is safe for
// concurrent use. Open it with Open; Close it when done.
type Client struct {
	cfg      Config
	log      *slog.Logger
	st       store.Store
	handlers map[string]*Handler
	names    []string // handler names, for claim filters ("" for defaultH)
	defaultH *Handler // Config.DefaultHandler, for jobs without a task
	started  time.Time
	events   *engine.Events
	exec     *engine.Executor // runs and finishes this client's jobs (runtime/engine)
	res      enqueue.Resolver // resolves, checks and places new jobs (runtime/enqueue)
	// taskNames resolves enqueued task names (catalog.go)
	taskNames *enqueue.Names
	schemas   *enqueue.Schemas // payload schemas of tasks without a handler here (schema.go)
	// claimAuto is set when Config.ClaimBatch was left zero: claims then
	// grow with a deep backlog of short jobs (engine.Config.ClaimMax).
	claimAuto bool

	// wake is signalled (without blocking) after every local enqueue, so
	// that an idle Run claims at once. Buffer 1: one pending wake-up is
	// enough, since the fetcher claims everything ready when it wakes.
	wake    chan struct{}
	running atomic.Bool
	closed  atomic.Bool

	alerts  *engine.Alerts   // the AlertThreshold check
	renames *enqueue.Renames // the tasks' earlier names (catalog.go)

	engine atomic.Pointer[worker] // the running engine, while Run is active
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
	// type), used when no handler of the task is registered here.
	validate func(json.RawMessage) error
}

// Open opens the client's store and returns a Client. It starts no
// goroutines: call Run to process jobs. With Config.Store nil it opens
// (creating if needed) the embedded SQLite store: the data directory and
// every shard file, migrating their schema; Open then fails with
// ErrShardMismatch if the directory holds another shard count and
// ErrNotDatabase for a shard file that is not a database. With a Store it
// uses that one, and closes it if Open fails. Open fails with a
// *ConfigError for a bad field and ErrDuplicateTask for two handlers with
// one name.
func Open(ctx context.Context, cfg Config) (c *Client, err error) {
	if cfg.Store != nil {
		defer func() {
			if err != nil {
				cfg.Store.Close()
			}
		}()
		if err := cfg.checkStoreFields(); err != nil {
			return nil, err
		}
		cfg.Shards = cfg.Store.Shards()
	}
	// Zero Shards: the store reads the count under its creation lock.
	infer := cfg.Shards == 0
	claimAuto := cfg.ClaimBatch == 0
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c = &Client{
		cfg:      cfg,
		log:      cfg.Logger,
		handlers: make(map[string]*Handler),
		wake:     make(chan struct{}, 1),
	}
	c.claimAuto = claimAuto
	c.events = engine.NewEvents(c.log, c.now)
	for i := range cfg.Handlers {
		h := &cfg.Handlers[i]
		if err := checkHandler(h); err != nil {
			return nil, err
		}
		if _, dup := c.handlers[h.Name]; dup {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateTask, h.Name)
		}
		c.handlers[h.Name] = h
		c.names = append(c.names, h.Name)
	}
	if err := c.checkHandlerQueues(); err != nil {
		return nil, err
	}
	if err := c.checkAliases(); err != nil { // catalog.go
		return nil, err
	}
	c.renames = enqueue.NewRenames(c.aliases())
	if _, ok := c.handlers[""]; ok {
		c.names = nil // a catch-all handler takes every task
	}
	if cfg.DefaultHandler != nil {
		if c.names == nil && len(c.handlers) > 0 {
			return nil, &ConfigError{"DefaultHandler", `a catch-all handler (Name "") already runs every job`}
		}
		// Claimed under the empty task name, which matches jobs stored
		// without one.
		c.defaultH = &Handler{Func: cfg.DefaultHandler}
		c.names = append(c.names, "")
	}
	st := cfg.Store
	if st == nil {
		shards := cfg.Shards
		if infer {
			shards = 0
		}
		if st, err = openSQLite(ctx, cfg, shards); err != nil {
			return nil, err
		}
	} else {
		c.cfg.Dir = "" // no data directory
	}
	c.st = st
	c.cfg.Store = st
	c.alerts = engine.NewAlerts(st, c.events, cfg.AlertThreshold, c.now, c.log)
	c.cfg.ReadOnly = st.ReadOnly()
	c.exec = c.newExecutor()
	c.cfg.Shards = st.Shards()
	c.taskNames = c.newTaskNames()
	c.schemas = c.newSchemas()
	c.res = enqueue.Resolver{Shards: c.cfg.Shards, MaxRetries: *cfg.MaxRetries, RetryDelay: cfg.RetryDelay, Now: c.now}
	if len(c.handlers) > 0 && !cfg.AllowUnknownTasks {
		c.res.Works = c.worksQueue
	}
	c.started = c.now()
	return c, nil
}

// checkHandler validates one handler's definition.
func checkHandler(h *Handler) error {
	if h.Func == nil {
		return fmt.Errorf("%w: handler %q has no Func", ErrInvalidConfig, h.Name)
	}
	o := h.Options
	switch {
	case !o.Priority.Valid():
		return fmt.Errorf("handler %q: %w", h.Name, ErrInvalidPriority)
	case o.MaxRetries != nil && enqueue.CheckRetries(*o.MaxRetries) != nil:
		return fmt.Errorf("handler %q: %w", h.Name, ErrInvalidRetries)
	case o.Timeout < 0 || o.RetryDelay < 0 || o.InlineRetries < 0:
		return fmt.Errorf("%w: handler %q: negative timeout, retry delay or inline retries", ErrInvalidConfig, h.Name)
	case o.RateLimit.Limit < 0 || (o.RateLimit.Limit > 0 && o.RateLimit.Per <= 0):
		return fmt.Errorf("%w: handler %q: rate limit needs Limit ≥ 0 and a positive Per", ErrInvalidConfig, h.Name)
	case !o.Unique.IsZero() && h.Periodic != nil:
		return fmt.Errorf("%w: periodic task %q cannot be unique (each slot fires once already)", ErrInvalidConfig, h.Name)
	}
	if err := enqueue.CheckUnique(o.Unique); err != nil {
		return fmt.Errorf("handler %q: %w", h.Name, err)
	}
	if err := checkGlobalLimits(h); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := enqueue.CheckTags(o.Tags); err != nil {
		return fmt.Errorf("%w: handler %q: %w", ErrInvalidConfig, h.Name, err)
	}
	if p := h.Periodic; p != nil {
		if _, _, err := parsePeriodic(p); err != nil {
			return fmt.Errorf("%w: periodic task %q: %v", ErrInvalidConfig, h.Name, err)
		}
		if p.Misfire != "" && p.Misfire != MisfireSkip && p.Misfire != MisfireRunOnce {
			return fmt.Errorf("%w: periodic task %q: misfire policy %q (want skip or catch_up)", ErrInvalidConfig, h.Name, p.Misfire)
		}
	}
	return nil
}

// Close closes the shard files. Call it after Run has returned; later calls
// return ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return ErrClosed
	}
	c.alerts.Stop()
	c.events.CloseAll()
	return c.st.Close()
}

// Shards returns the number of shards.
func (c *Client) Shards() int { return c.cfg.Shards }

// Dir returns the data directory, or "" for a PostgreSQL store.
func (c *Client) Dir() string { return c.cfg.Dir }

func (c *Client) now() time.Time { return c.cfg.now().UTC() }

// notify wakes an idle fetcher.
func (c *Client) notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Enqueue stores one job of task with payload (a struct, map or
// json.RawMessage that encodes to a JSON object) and returns its ID. The job
// is durable once Enqueue returns nil. Task defaults come from the handler
// registered under task, if any. Concurrent enqueues to one shard share a
// transaction.
//
// task must name one of the client's handlers or, for a task it has no
// handler of, a task of the store's task catalogue (written by every Run,
// kept after the workers stop; see TaskCatalog), by its full name, an
// alias or a short name such as SendEmail that matches one task. Other
// names are ErrUnknownTask listing the near matches, unless
// Opts.AllowUnknownTask or Config.AllowUnknownTasks is set. The payload of a registered task is checked against its parameters
// (see DecodeArgs), and that of a task registered only in other processes
// against the payload schema their live workers publish (see
// WorkerInfo.Schemas): a *PayloadShapeError names the bad field. It returns
// ErrInvalidPayload, ErrInvalidPriority or ErrInvalidRetries for other bad
// input, and ErrClosed after Close.
func (c *Client) Enqueue(ctx context.Context, task string, payload any, o Opts) (JobID, error) {
	return c.enqueueOne(ctx, EnqueueParams{Task: task, Payload: payload, Opts: o})
}

func (c *Client) enqueueOne(ctx context.Context, e EnqueueParams) (JobID, error) {
	r, err := c.enqueueResult(ctx, e)
	return r.ID, err
}

// enqueueResult stores one job and says whether it was a duplicate.
func (c *Client) enqueueResult(ctx context.Context, e EnqueueParams) (EnqueueResult, error) {
	p, err := c.prepare(e)
	if err != nil {
		return EnqueueResult{}, err
	}
	ps := []store.InsertParams{p}
	ids, err := c.insertVia(ctx, ps, c.res.Place, c.st.Insert)
	if err != nil {
		return EnqueueResult{}, err
	}
	c.afterInsert(ctx, ps, ids)
	return EnqueueResult{ID: ids[0], Duplicate: isDuplicate(&ps[0])}, nil
}

// prepareMany prepares every job of a batch; an invalid one is an error
// naming its index (ErrClosed as it is).
func (c *Client) prepareMany(jobs []EnqueueParams) ([]store.InsertParams, error) {
	ps := make([]store.InsertParams, len(jobs))
	for i, e := range jobs {
		p, err := c.prepare(e)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		ps[i] = p
	}
	return ps, nil
}

// prepare validates one job and resolves its defaults: every enqueue
// path's one resolution of a job's options (place then chooses its shard).
func (c *Client) prepare(e EnqueueParams) (store.InsertParams, error) {
	if c.closed.Load() {
		return store.InsertParams{}, ErrClosed
	}
	typed := e.defaults != nil
	task := e.Task
	if _, known := c.handlers[task]; !typed && !known {
		// Only a name to resolve may read the catalogue: the timer is
		// not worth its cost on the path of a known task.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		task, err = c.taskNames.Resolve(rctx, e.Task, typed, e.Opts.AllowUnknownTask)
		cancel()
		if err != nil {
			return store.InsertParams{}, err
		}
	}
	e.Task = task
	raw, err := enqueue.EncodePayload(e.Payload)
	if err != nil {
		return store.InsertParams{}, err
	}
	// One check, the decode the worker runs: the registered handler's,
	// else the typed handle's, else the shape a live worker published.
	if h, ok := c.handlers[task]; ok && h.Validate != nil {
		if err := h.Validate(raw); err != nil {
			return store.InsertParams{}, err
		}
	} else if e.validate != nil {
		if err := e.validate(raw); err != nil {
			return store.InsertParams{}, err
		}
	} else if !ok {
		if err := c.schemas.Check(task, raw); err != nil {
			return store.InsertParams{}, err
		}
	}
	def := e.defaults
	if def == nil {
		if h, ok := c.handlers[e.Task]; ok {
			def = &h.Options
		} else {
			def = &TaskOptions{}
		}
	}
	d, o := def.defaults(), e.Opts.resolved()
	return c.res.Resolve(task, raw, &d, &o) // its shard is chosen by Place, after the enqueue middleware
}

func (c *Client) afterInsert(ctx context.Context, ps []store.InsertParams, ids []JobID) {
	c.events.Enqueued(ctx, ps, ids) // before the wake-up: a job's enqueue event precedes its completion
	c.notify()
	c.checkAlert(ctx, false)
}

// EnqueueMany stores jobs all or nothing and returns their IDs in order.
// Every job is validated first: if any is invalid nothing is stored and the
// error names its index. The jobs without a key of one call go to one
// shard (runs of max(1,000, n/Shards) on consecutive shards for a larger
// call; see enqueue.Place), so that a batch is one transaction. The shards
// are written in parallel; a batch that spans shards is staged in each, committed by one record in shard 0 and
// then published, so no job of it can be claimed before all are stored,
// and after an error (a locked shard, a full disk) none ran or stays. Jobs
// a killed producer left staged are removed by the next Open or orphan
// recovery.
func (c *Client) EnqueueMany(ctx context.Context, jobs []EnqueueParams) ([]JobID, error) {
	ps, err := c.prepareMany(jobs)
	if err != nil {
		return nil, err
	}
	return c.insertPrepared(ctx, ps)
}

// insertPrepared stores jobs that prepare has validated.
func (c *Client) insertPrepared(ctx context.Context, ps []store.InsertParams) ([]JobID, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	ids, err := c.insertVia(ctx, ps, c.res.Place, c.st.Insert)
	if err != nil {
		return nil, err
	}
	c.afterInsert(ctx, ps, ids)
	return ids, nil
}

// checkAlert emits EventAlert when pending (ready plus scheduled) jobs
// exceed Config.AlertThreshold; see engine.Alerts.Check.
func (c *Client) checkAlert(ctx context.Context, force bool) { c.alerts.Check(ctx, force) }

// waitingCount returns how many jobs are pending or scheduled.
func (c *Client) waitingCount(ctx context.Context) (int64, error) {
	return c.st.WaitingCount(ctx)
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

// Job returns one stored job, or ErrJobNotFound (a job that completed
// without a result is deleted).
func (c *Client) Job(ctx context.Context, id JobID) (*Job, error) {
	if err := c.checkJobID(id); err != nil {
		return nil, err
	}
	j, err := c.st.Job(ctx, id)
	if err == nil {
		c.fillLimitHeld(ctx, []*Job{j})
		c.fillHeld(ctx, []*Job{j})
	}
	return j, err
}

// checkJobID refuses, as ErrJobNotFound, an ID whose shard this queue does
// not have: no such job can exist.
func (c *Client) checkJobID(id JobID) error {
	if sh := id.Shard(); id <= 0 || sh < 0 || sh >= c.cfg.Shards {
		return fmt.Errorf("%w: job %d (no shard %d: the queue has shards 0–%d)", ErrJobNotFound, id, sh, c.cfg.Shards-1)
	}
	return nil
}

// Result returns the stored JSON result of a completed job: ErrNoResult if
// it has not completed or returned no result, ErrJobNotFound if no such job
// is stored.
func (c *Client) Result(ctx context.Context, id JobID) (json.RawMessage, error) {
	j, err := c.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	if j.Status != StatusCompleted || j.Result == nil {
		return nil, fmt.Errorf("%w: job %d is %s", ErrNoResult, id, j.Status)
	}
	return j.Result, nil
}
