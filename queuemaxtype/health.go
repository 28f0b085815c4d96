package queuemaxtype

import "time"

// HealthStatus is the overall verdict of a Health check.
type HealthStatus string

// Health verdicts, from best to worst.
const (
	// HealthOK: the queue works and no task's dependency is down.
	HealthOK HealthStatus = "ok"
	// HealthDegraded: the queue works, but the circuit breaker of one or
	// more tasks is open (or probing): their dependency is down and their
	// jobs wait, while every other task runs. Not an outage of the system.
	HealthDegraded HealthStatus = "degraded"
	// HealthUnhealthy: the queue itself does not work: a shard (or the
	// database) cannot be read, or jobs wait that no live worker runs.
	HealthUnhealthy HealthStatus = "unhealthy"
)

// Health separates "the queue works" from "a dependency is down". Problems
// say why the queue does not work (Status unhealthy); Degraded lists the
// tasks whose breaker holds their jobs (Status degraded when there is no
// problem). See queuemax.Client.Health.
type Health struct {
	Status HealthStatus `json:"status"`
	// Problems are the reasons for HealthUnhealthy, one sentence each.
	Problems []string `json:"problems,omitempty"`
	// Degraded are the tasks whose circuit breaker is open or half-open.
	Degraded []DegradedTask `json:"degraded,omitempty"`
	// Workers counts the live entries of the worker registry.
	Workers int `json:"workers"`
	// CheckedAt is when the check ran.
	CheckedAt time.Time `json:"checked_at"`
}

// DegradedTask is one task whose dependency is down: its breaker's state,
// when it lets a probe through, and the last counted failure.
type DegradedTask struct {
	Task      string    `json:"task"`
	Breaker   string    `json:"breaker"` // open or half_open
	OpenUntil time.Time `json:"open_until,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}
