package queuemax

import (
	"context"

	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/store"
)

// SetQueueLimits sets queue's global limits, over every process that
// shares the store: from their next claim round, at most l.Rate jobs of
// the queue start, and at most l.Concurrency run at once (a process that
// saw no limit on any queue reads them again within 50 ms, or
// PollInterval if longer). The limits are stored and outlive every
// process; the zero QueueLimits clears them. Jobs already running are
// not stopped. A bad name is ErrInvalidQueue, a bad limit
// ErrInvalidLimit; a store without global limits returns an error saying
// so.
func (c *Client) SetQueueLimits(ctx context.Context, queue string, l QueueLimits) error {
	queue = store.QueueOf(queue)
	if err := store.CheckQueueName(queue); err != nil {
		return err
	}
	if err := admission.CheckQueueLimits(queue, l.Rate.Limit, l.Rate.Per, l.Concurrency); err != nil {
		return err
	}
	lim := c.st
	if c.cfg.ReadOnly {
		return ErrReadOnly
	}
	if err := lim.SetQueueLimits(ctx, queue, l.rule(), c.now()); err != nil {
		return err
	}
	if e := c.engine.Load(); e != nil {
		e.QueueLimitsChanged()
	}
	c.notify()
	return nil
}

// queueLimits returns every queue's stored limits (nil without any).
func (c *Client) queueLimits(ctx context.Context) (map[string]QueueLimits, error) {
	rules, err := c.st.QueueLimits(ctx)
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	out := make(map[string]QueueLimits, len(rules))
	for name, r := range rules {
		l := QueueLimits{Concurrency: r.Concurrency}
		if r.Rate > 0 {
			l.Rate = Rate{Limit: r.Rate, Per: r.Per}
		}
		out[name] = l
	}
	return out, nil
}

// addQueueLimits sets each queue's Limits in byName, adding the limited
// queues it lacks.
func (c *Client) addQueueLimits(ctx context.Context, byName map[string]QueueInfo) error {
	ls, err := c.queueLimits(ctx)
	if err != nil {
		return err
	}
	for name, l := range ls {
		q := byName[name]
		q.Name, q.Limits = name, l
		byName[name] = q
	}
	return nil
}
