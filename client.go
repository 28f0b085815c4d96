package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

var errTODO = errors.New("queuemax: not yet built")

// Client is an open queue: a data directory of shard files, the handlers
// that run its tasks, and (while Run is active) the workers. It is safe for
// concurrent use. Open it with Open; Close it when done.
type Client struct {
	cfg      Config
	st       store.Store
	handlers map[string]*Handler
}

// EnqueueParams describes one job for EnqueueMany.
type EnqueueParams struct {
	// Task is the task name. It may name no registered handler (another
	// process may run it).
	Task string
	// Payload is JSON-encoded and must encode to an object: a struct, a
	// map, or a json.RawMessage holding an object.
	Payload any
	// Opts overrides the task's defaults.
	Opts Opts

	defaults *TaskOptions
}

// Open opens (creating if needed) the data directory and every shard file,
// migrates their schema, and returns a Client. It starts no goroutines: call
// Run to process jobs. Open fails with a *ConfigError for a bad field,
// ErrShardMismatch if the directory holds another shard count,
// ErrNotDatabase for a corrupt shard file, and ErrDuplicateTask.
func Open(ctx context.Context, cfg Config) (*Client, error) { return nil, errTODO }

// Close closes the shard files. Run must have returned first. Later calls
// return ErrClosed.
func (c *Client) Close() error { return errTODO }

// Run processes jobs until ctx ends, then drains: it stops claiming, lets
// running jobs finish for up to Config.DrainTimeout, cancels the rest and
// returns them to pending. It returns nil after a drain caused by ctx, and
// only after every goroutine it started has exited.
func (c *Client) Run(ctx context.Context) error { return errTODO }

func (c *Client) now() time.Time { return c.cfg.now() }

// Enqueue stores one job of task with payload (a struct, map or
// json.RawMessage that encodes to a JSON object) and returns its ID.
func (c *Client) Enqueue(ctx context.Context, task string, payload any, o Opts) (JobID, error) {
	return c.enqueueOne(ctx, task, nil, payload, o)
}

func (c *Client) enqueueOne(ctx context.Context, task string, def *TaskOptions, payload any, o Opts) (JobID, error) {
	return 0, errTODO
}

// EnqueueMany stores jobs in one transaction per shard, the shards written
// in parallel, and returns their IDs in order. Every job is validated first:
// on any invalid job nothing is stored.
func (c *Client) EnqueueMany(ctx context.Context, jobs []EnqueueParams) ([]JobID, error) {
	return nil, errTODO
}

// TaskStats returns the counts of one task's jobs by status.
func (c *Client) TaskStats(ctx context.Context, task string) (TaskStats, error) {
	return TaskStats{}, errTODO
}

// Result returns the stored JSON result of a completed job.
func (c *Client) Result(ctx context.Context, id JobID) (json.RawMessage, error) {
	return nil, errTODO
}
