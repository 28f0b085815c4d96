package queuemax

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/schedule"
	"github.com/queuemax/queuemax/runtime/store"
)

// PeriodicInfo describes one periodic task as the scheduler stored it;
// see queuemaxtype.PeriodicInfo for its fields.
type PeriodicInfo = queuemaxtype.PeriodicInfo

// PeriodicTasks lists the periodic tasks registered in the data directory
// by any process, with their next and last runs.
func (c *Client) PeriodicTasks(ctx context.Context) ([]PeriodicInfo, error) {
	return engine.PeriodicTasks(ctx, c.st)
}

// newScheduler returns the periodic scheduler of c's periodic handlers
// (runtime/schedule), which enqueues through c's enqueue path.
func (c *Client) newScheduler() (*schedule.Scheduler, error) {
	var entries []schedule.Entry
	for _, name := range c.names {
		h := c.handlers[name]
		if h == nil || h.Periodic == nil { // nil: Config.DefaultHandler
			continue
		}
		p := h.Periodic
		entries = append(entries, schedule.Entry{Task: name, Every: p.Every, Cron: p.Cron, Misfire: string(p.Misfire)})
	}
	s, err := schedule.New(schedule.Config{Store: c.st, Entries: entries, Insert: periodicInserter{c}, Events: c.events,
		Wake: c.wake, Now: c.now, Log: c.log})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return s, nil
}

// periodicInserter enqueues a periodic slot's job as an enqueue does
// (the task's defaults and the insert middleware), on shard 0.
type periodicInserter struct{ c *Client }

func (p periodicInserter) InsertPeriodic(ctx context.Context, task string, now time.Time,
	fire func(context.Context, store.InsertParams) (store.JobID, error)) error {
	job, err := p.c.prepare(EnqueueParams{Task: task, Payload: json.RawMessage(`{}`)})
	if err != nil {
		return err
	}
	job.Now = now // on shard 0 (prepare chooses none), fired with the slot
	onShard0 := func(ps []store.InsertParams) { ps[0].Shard = 0 }
	_, err = p.c.insertVia(ctx, []store.InsertParams{job}, onShard0, func(ctx context.Context, ps []store.InsertParams) ([]JobID, error) {
		id, err := fire(ctx, ps[0])
		if err != nil || id == 0 {
			return nil, err
		}
		return []JobID{id}, nil
	})
	return err
}

// RunScheduler runs only the periodic scheduler, without workers, until ctx
// ends. Run already runs it; use this in a process that should enqueue
// periodic jobs but not execute them. Any number of processes may run a
// scheduler on one data directory: each slot is enqueued exactly once.
func (c *Client) RunScheduler(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.cfg.ReadOnly {
		return ErrReadOnly
	}
	s, err := c.newScheduler()
	if err != nil {
		return err
	}
	return s.Run(ctx)
}
