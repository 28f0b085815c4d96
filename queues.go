package queuemax

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// DefaultQueue is the queue of every job whose task and enqueue name none,
// and of every job queue-max writes.
const DefaultQueue = store.DefaultQueue

// Queue errors.
var (
	// ErrInvalidQueue is matched by the error for a queue name that is not
	// 1–64 bytes of a-z, 0-9 and _ - . (starting with a letter or digit),
	// in Opts.Queue, TaskOptions.Queue, Config.Queues, Pause and Resume.
	ErrInvalidQueue = store.ErrInvalidQueue
	// ErrUnknownQueue is returned by an enqueue into a queue that this
	// client would never work: Config.Queues is set, does not list the
	// queue, and the client has handlers (unless Config.AllowUnknownTasks
	// is set, as for tasks). Such a job would wait for another process.
	ErrUnknownQueue = enqueue.ErrUnknownQueue
)

// CheckQueueName reports whether name may name a queue; the error matches
// ErrInvalidQueue and says what is wrong.
func CheckQueueName(name string) error { return store.CheckQueueName(name) }

// checkHandlerQueues validates each handler's TaskOptions.Queue: a valid
// name, and one this client works (listed in Config.Queues, when set).
func (c *Client) checkHandlerQueues() error {
	for _, name := range c.names {
		h := c.handlers[name]
		if h == nil || h.Options.Queue == "" {
			continue
		}
		q := h.Options.Queue
		if err := store.CheckQueueName(q); err != nil {
			return fmt.Errorf("%w: handler %q: %w", ErrInvalidConfig, h.Name, err)
		}
		if !c.worksQueue(q) {
			return &ConfigError{"Queues", fmt.Sprintf("task %q is in queue %q, which Queues does not list (add it, or its jobs wait for another process)", h.Name, q)}
		}
	}
	return nil
}

// worksQueue reports whether this client's Run claims jobs of queue q.
func (c *Client) worksQueue(q string) bool {
	if len(c.cfg.Queues) == 0 || q == "" || q == DefaultQueue {
		return true
	}
	_, ok := c.cfg.Queues[q]
	return ok
}

// Pause pauses queue on every process that shares the store: from their
// next claim (within a poll interval, PollInterval), no worker starts a job
// of the queue; running jobs finish. Enqueues into a paused queue are
// stored and wait. The pause is stored, so it outlives every process until
// Resume. Pausing a paused queue, or a queue without jobs, is not an
// error; a bad name is ErrInvalidQueue. It emits EventQueuePaused.
func (c *Client) Pause(ctx context.Context, queue string) error {
	if err := c.st.QueuePause(ctx, store.QueueOf(queue), c.now()); err != nil {
		return err
	}
	c.emit(ctx, Event{Kind: EventQueuePaused, Queue: store.QueueOf(queue)})
	return nil
}

// Resume resumes a paused queue on every process; its waiting jobs are
// claimed again from the next claim on (idle workers wake as for an
// enqueue). Resuming a queue that is not paused is not an error. It emits
// EventQueueResumed.
func (c *Client) Resume(ctx context.Context, queue string) error {
	if err := c.st.QueueResume(ctx, store.QueueOf(queue), c.now()); err != nil {
		return err
	}
	c.notify()
	c.emit(ctx, Event{Kind: EventQueueResumed, Queue: store.QueueOf(queue)})
	return nil
}

// Queues returns every queue that has waiting or running jobs, was ever
// paused, or that this client configures, ordered by name, with its counts
// over every shard, its paused state and this client's MaxWorkers for it.
func (c *Client) Queues(ctx context.Context) ([]QueueInfo, error) {
	qs, err := c.st.QueueList(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]QueueInfo, len(qs))
	for _, q := range qs {
		byName[q.Name] = QueueInfo{Name: q.Name, Pending: q.Pending, Scheduled: q.Scheduled, Processing: q.Processing,
			Paused: q.Paused, PausedAt: q.PausedAt}
	}
	if len(c.cfg.Queues) > 0 {
		rest := c.cfg.Workers
		for name, qc := range c.cfg.Queues {
			q := byName[name]
			q.Name, q.MaxWorkers = name, qc.MaxWorkers
			byName[name] = q
			rest -= qc.MaxWorkers
		}
		q := byName[DefaultQueue]
		q.Name, q.MaxWorkers = DefaultQueue, rest
		byName[DefaultQueue] = q
	}
	if err := c.addQueueLimits(ctx, byName); err != nil {
		return nil, err
	}
	out := make([]QueueInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out, nil
}
