package queuemax

import (
	"context"

	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/store"
)

// ErrInvalidLimit is wrapped by the errors of a bad global limit
// (TaskOptions.GlobalRateLimit, GlobalConcurrency, QueueLimits).
var ErrInvalidLimit = store.ErrInvalidLimit

// limitRules returns the limits of the client's handlers.
func (c *Client) limitRules() admission.Rules {
	rs := make(admission.Rules, len(c.handlers))
	for name, h := range c.handlers {
		rs[name] = taskRule(h.Options)
	}
	return rs
}

// GlobalLimits returns every global limit this client's handlers set,
// with its current use over every process.
func (c *Client) GlobalLimits(ctx context.Context) ([]GlobalLimitInfo, error) {
	return c.globalLimits(ctx)
}

// globalLimits lists the global limits this client's handlers set, those
// other processes stored and the queues', with their use from the store.
func (c *Client) globalLimits(ctx context.Context) ([]GlobalLimitInfo, error) {
	return admission.ReadInfos(ctx, c.st, c.now(), c.limitRules())
}

// fillLimitHeld sets Held on the ready jobs among jobs whose task's, key's
// or queue's global limit is reached (runtime/admission.LimitHeld).
func (c *Client) fillLimitHeld(ctx context.Context, jobs []*Job) {
	admission.LimitHeld(ctx, c.st, c.now(), jobs, c.limitRules())
}
