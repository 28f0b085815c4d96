package queuemaxtype

import (
	"fmt"
	"strings"
	"time"
)

// GlobalLimitInfo is one global limit and its current use, over every
// process on the same data directory or database (Stats.GlobalLimits).
type GlobalLimitInfo struct {
	// Scope is "task" or "queue"; Name the task's or the queue's name.
	Scope string `json:"scope"`
	Name  string `json:"name"`
	// Rate starts per Per (zero: no rate limit); Concurrency the most
	// jobs running at once (zero: no cap).
	Rate        int    `json:"rate,omitempty"`
	Per         string `json:"per,omitempty"`
	Concurrency int    `json:"concurrency,omitempty"`
	// Running is how many of the limit's jobs run now; Started how many
	// jobs started in the last Per. Slots is how many slots processes
	// hold now: a queue's cap without a rate lets a process keep slots
	// for its next jobs (prefetch), so Slots may exceed Running, and a
	// queue with no job running shows Running 0 whatever its slots.
	Running int `json:"running"`
	Started int `json:"started"`
	Slots   int `json:"slots"`
	// By is the payload key the limits apply per (TaskOptions.LimitBy);
	// then Keys is how many keys hold state now, and Running and Started
	// are the busiest key's.
	By   string `json:"by,omitempty"`
	Keys int    `json:"keys,omitempty"`
}

// String is the limit's use as the CLI prints it, e.g.
// "task shop.Charge: running 2/2, started 37/50 per 1s".
func (g GlobalLimitInfo) String() string {
	if g.By != "" {
		return fmt.Sprintf("%s %s per %s (%d keys in use; the busiest): %s", g.Scope, g.Name, g.By, g.Keys, g.Usage())
	}
	return fmt.Sprintf("%s %s: %s", g.Scope, g.Name, g.Usage())
}

// Usage is the limit's use against it, e.g. "running 3/4, started 12/50
// per 1s" (of its busiest key when By is set): the part of String after
// the limit's name.
func (g GlobalLimitInfo) Usage() string {
	var parts []string
	if g.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("running %d/%d", g.Running, g.Concurrency))
		if g.Slots > g.Running {
			parts = append(parts, fmt.Sprintf("%d slots held", g.Slots))
		}
	}
	if g.Rate > 0 {
		parts = append(parts, fmt.Sprintf("started %d/%d per %s", g.Started, g.Rate, g.Per))
	}
	return strings.Join(parts, ", ")
}

// CircuitBreakerInfo is one task's circuit breaker as stored: the breaker
// every process running the task shares (see docs/breakers.md).
type CircuitBreakerInfo struct {
	// Task is the task name; "" is a catch-all handler's breaker.
	Task string `json:"task"`
	// State is "closed", "open" or "half_open".
	State string `json:"state"`
	// Failures counts the consecutive dependency failures (since the last
	// success any process recorded).
	Failures int `json:"failures"`
	// Threshold is this client's setting for the task (0 when it has no
	// handler of it, or its breaker is off).
	Threshold int `json:"threshold,omitempty"`
	// OpenedAt is when it last opened, OpenUntil when an open breaker lets
	// a probe through.
	OpenedAt  time.Time `json:"opened_at,omitzero"`
	OpenUntil time.Time `json:"open_until,omitzero"`
	// ProbeOwner is the worker running the half-open probe, until
	// ProbeExpires.
	ProbeOwner   string    `json:"probe_owner,omitempty"`
	ProbeExpires time.Time `json:"probe_expires,omitzero"`
	// LastError is the last counted failure's message.
	LastError string    `json:"last_error,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Held says why the breaker holds the task's ready jobs; "" when it
	// is closed.
	Held string `json:"held,omitempty"`
}
