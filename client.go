package queuemax

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/schedule"
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
	schemas   *enqueue.Schemas // payload schemas of tasks without a handler here (registry.go)
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

// worker is one Run: the engine, plus what the API keeps about it (its
// worker-registry entry).
type worker struct {
	*engine.Engine
	c *Client
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
	if err := taskRule(h.Options).Check(h.Name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := enqueue.CheckTags(o.Tags); err != nil {
		return fmt.Errorf("%w: handler %q: %w", ErrInvalidConfig, h.Name, err)
	}
	if p := h.Periodic; p != nil {
		if _, _, err := schedule.Parse(p.Every, p.Cron); err != nil {
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

// checkAlert emits EventAlert when pending (ready plus scheduled) jobs
// exceed Config.AlertThreshold; see engine.Alerts.Check.
func (c *Client) checkAlert(ctx context.Context, force bool) { c.alerts.Check(ctx, force) }

// waitingCount returns how many jobs are pending or scheduled.
func (c *Client) waitingCount(ctx context.Context) (int64, error) {
	return c.st.WaitingCount(ctx)
}
