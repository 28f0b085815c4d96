package queuemaxtype

import (
	"encoding/json"
	"slices"
	"time"
)

// WorkerInfo is one running process's entry in the live worker registry,
// which every Run writes into the store (shard 0 for SQLite) before it
// claims anything, refreshes every Config.HeartbeatInterval (at least
// every RegistryMinRefresh apart) and removes when it stops cleanly. An
// entry whose process died expires RegistryTTL refresh intervals after its
// last refresh, or Config.StuckTimeout after it if that is later (the
// bound after which orphan recovery takes the process's jobs back).
// Breakers and RateLimits are the process's state as of UpdatedAt.
type WorkerInfo struct {
	// ID is the process's Config.WorkerID (the worker_id of its claims).
	ID        string    `json:"id"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"` // when its Run started
	UpdatedAt time.Time `json:"updated_at"` // its last refresh
	ExpiresAt time.Time `json:"expires_at"` // when the entry lapses without a refresh
	// Tasks are the task names it runs, sorted; empty means every task (a
	// catch-all handler).
	Tasks       []string `json:"tasks"`
	Concurrency int      `json:"concurrency"` // jobs it may run at once
	Running     int      `json:"running"`     // handlers executing at the last refresh
	// Breakers maps each task (or "" for a catch-all) to its circuit
	// breaker's state: closed, open or half_open.
	Breakers map[string]string `json:"breakers"`
	// RateLimits maps each rate-limited task to its limiter; the key "*"
	// is the process-wide Config.RateLimit.
	RateLimits map[string]RateLimitInfo `json:"rate_limits,omitempty"`
	// Schemas maps each task it runs through Define or DefineResult to
	// the JSON Schema of its payload (see PayloadSchema). A client with no
	// handler of a task (the queuemax CLI, the admin API of a producer)
	// checks each payload of it against the schemas the live workers
	// publish, and refuses one that fits none.
	Schemas map[string]json.RawMessage `json:"schemas,omitempty"`
}

// Handles reports whether the worker runs task.
func (w WorkerInfo) Handles(task string) bool {
	return len(w.Tasks) == 0 || slices.Contains(w.Tasks, task)
}

// RateLimitInfo is one token-bucket rate limiter's state.
type RateLimitInfo struct {
	Limit  int     `json:"limit"`  // tokens per Per
	Per    string  `json:"per"`    // a Go duration, such as "1m0s"
	Tokens float64 `json:"tokens"` // available now
	// Denied counts the claims the limiter held back for want of a token
	// since the process started: jobs that waited.
	Denied uint64 `json:"denied"`
}

// TaskInfo is one task's backlog in Stats, with how many live workers run
// it.
type TaskInfo struct {
	Pending   int64 `json:"pending"`
	Scheduled int64 `json:"scheduled"`
	Workers   int   `json:"workers"` // live registry entries that handle the task
}

// WorkerState is the state of Run's engine (queuemax.Client.WorkerStats).
type WorkerState string

// Worker states.
const (
	WorkerIdle     WorkerState = "initialized"
	WorkerRunning  WorkerState = "running"
	WorkerStopping WorkerState = "stopping"
	WorkerStopped  WorkerState = "stopped"
)

// WorkerStats describes the engine of a running (or stopped) Run.
type WorkerStats struct {
	WorkerID          string        `json:"worker_id"`
	State             WorkerState   `json:"state"`
	Concurrency       int           `json:"concurrency"` // current worker count (changes with autoscaling)
	Running           int           `json:"running"`     // jobs whose handler is executing now
	Prefetched        int           `json:"prefetched"`  // claimed jobs waiting for a free worker (ClaimBatch > Workers)
	Processed         int64         `json:"processed"`   // completed
	Failed            int64         `json:"failed"`      // dead-lettered
	Retried           int64         `json:"retried"`     // failed attempts that will retry
	LeaseLost         int64         `json:"lease_lost"`  // acknowledgements rejected because the job was taken back
	StartedAt         time.Time     `json:"started_at"`
	Uptime            time.Duration `json:"-"`
	UptimeSeconds     float64       `json:"uptime_seconds"`
	ThroughputPerHour float64       `json:"throughput_jobs_per_hour"` // processed per wall-clock hour of uptime
	CurrentJobs       []JobID       `json:"current_jobs,omitempty"`   // executing or prefetched
}
