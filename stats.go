package queuemax

import (
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/store"
)

// Stats is a snapshot of the queue: every field of queue-max's get_stats,
// plus per-shard figures.
type Stats struct {
	Pending         int64   `json:"pending"`    // ready now
	Scheduled       int64   `json:"scheduled"`  // waiting for a run-at or retry time
	Processing      int64   `json:"processing"` // running
	Failed          int64   `json:"failed"`     // dead-lettered and still in the queue table
	Completed       int64   `json:"completed"`  // completed and kept for their result
	DeadLetters     int64   `json:"dead_letters"`
	TotalProcessed  int64   `json:"total_processed"` // completions ever recorded
	TotalFailed     int64   `json:"total_failed"`    // dead-letterings ever recorded
	NumShards       int     `json:"num_shards"`
	MaxRetries      int     `json:"max_retries"`
	RateLimit       int     `json:"rate_limit"`       // tokens per RateLimitPer; 0 = none
	RateLimitPer    string  `json:"rate_limit_per"`   // e.g. "1m0s"
	TokensAvailable float64 `json:"tokens_available"` // -1 when not limited
	CircuitState    string  `json:"circuit_state"`    // the worst task breaker's: closed, open, half_open
	CircuitFailures int     `json:"circuit_failures"` // the most consecutive dependency failures of any task
	// Circuits maps each task to its stored breaker's state, the one every
	// process shares (see CircuitBreakers).
	Circuits map[string]string `json:"circuits,omitempty"`
	// Breakers are the stored circuit breakers (see CircuitBreakers).
	Breakers []CircuitBreakerInfo `json:"breakers,omitempty"`
	// RateLimits maps each rate-limited task ("*" for the process-wide
	// limit) to its limiter: this process's while its Run is active,
	// otherwise summed over the live workers (each process limits itself).
	RateLimits map[string]RateLimitInfo `json:"rate_limits,omitempty"`
	// UptimeSeconds is the queue's uptime: since the earliest live worker
	// started, or, with no live worker, since the queue was created.
	UptimeSeconds float64 `json:"uptime_seconds"`
	// IsHealthy reports whether the queue works: every shard could be
	// read. An open circuit breaker does not make it false: it is a
	// dependency of one task that is down, listed in Degraded (see
	// Client.Health for the whole picture).
	IsHealthy bool `json:"is_healthy"`
	// Degraded lists, sorted, the tasks whose circuit breaker is open or
	// half-open: their jobs wait for a dependency while every other task
	// runs.
	Degraded []string     `json:"degraded,omitempty"`
	PerShard []ShardStats `json:"shards"`
	// Tasks maps every task with pending or scheduled jobs to its backlog
	// and how many live workers run it.
	Tasks map[string]TaskInfo `json:"tasks,omitempty"`
	// Warnings lists problems nobody would otherwise notice, such as a task
	// with pending jobs that no live worker runs.
	Warnings []string `json:"warnings,omitempty"`
	// Workers are the live entries of the worker registry (see Workers).
	Workers []WorkerInfo `json:"workers,omitempty"`
	// Queues lists the queues with their counts and paused state (see
	// Client.Queues).
	Queues []QueueInfo `json:"queues,omitempty"`
	// GlobalLimits lists the global limits of this client's tasks and of
	// the queues, with their use over every process (see GlobalLimits).
	GlobalLimits []GlobalLimitInfo `json:"global_limits,omitempty"`
	// Workflows counts the stored workflows by status (see
	// Client.EnqueueWorkflow).
	Workflows WorkflowCounts `json:"workflows"`
}

// WorkerInfo is one running process's entry in the live worker registry;
// see queuemaxtype.WorkerInfo
// (go doc github.com/queuemax/queuemax/queuemaxtype.WorkerInfo) for its
// fields and methods.
type WorkerInfo = queuemaxtype.WorkerInfo

// RateLimitInfo is one token-bucket rate limiter's state; see
// queuemaxtype.RateLimitInfo.
type RateLimitInfo = queuemaxtype.RateLimitInfo

// TaskInfo is one task's backlog in Stats, with how many live workers run
// it; see queuemaxtype.TaskInfo.
type TaskInfo = queuemaxtype.TaskInfo

// CircuitBreakerInfo is one task's circuit breaker as stored: the breaker
// every process running the task shares (see docs/breakers.md); see
// queuemaxtype.CircuitBreakerInfo
// (go doc github.com/queuemax/queuemax/queuemaxtype.CircuitBreakerInfo)
// for its fields.
type CircuitBreakerInfo = queuemaxtype.CircuitBreakerInfo

// GlobalLimitInfo is one global limit and its current use, over every
// process on the same data directory or database (Stats.GlobalLimits);
// see queuemaxtype.GlobalLimitInfo
// (go doc github.com/queuemax/queuemax/queuemaxtype.GlobalLimitInfo) for
// its fields and methods.
type GlobalLimitInfo = queuemaxtype.GlobalLimitInfo

// WorkflowCounts counts stored workflows by status (Stats.Workflows); see
// queuemaxtype.WorkflowCounts for its fields.
type WorkflowCounts = queuemaxtype.WorkflowCounts

// QueueInfo is one queue as Client.Queues and Stats report it.
type QueueInfo struct {
	Name       string `json:"name"`
	Pending    int64  `json:"pending"`    // ready now
	Scheduled  int64  `json:"scheduled"`  // waiting for a run-at or retry time
	Processing int64  `json:"processing"` // running, on any process
	// Paused is true while claims skip the queue (Client.Pause), since
	// PausedAt.
	Paused   bool      `json:"paused"`
	PausedAt time.Time `json:"paused_at,omitzero"`
	// MaxWorkers is this client's Config.Queues entry for the queue; for
	// the default queue, the workers the named queues leave; 0 for a
	// queue this client does not configure.
	MaxWorkers int `json:"max_workers,omitempty"`
	// Limits are the queue's global limits (Client.SetQueueLimits); zero
	// if it has none.
	Limits QueueLimits `json:"limits,omitzero"`
}

// QueueLimits are the global limits of a named queue, over every process
// on the same data directory or database (Client.SetQueueLimits): at most
// Rate starts (a token bucket with a burst of Rate.Limit, as
// TaskOptions.GlobalRateLimit) and at most Concurrency jobs of the queue
// running at once. The zero value limits nothing.
// Its JSON is {"rate": 50, "per": "1s", "concurrency": 4}, each field
// left out when zero.
type QueueLimits struct {
	Rate        Rate
	Concurrency int
}

// MarshalJSON writes l as {"rate": N, "per": "1s", "concurrency": N}.
func (l QueueLimits) MarshalJSON() ([]byte, error) {
	return admission.MarshalQueueLimits(l.rule())
}

// UnmarshalJSON reads MarshalJSON's form; "per" is a duration ("1s",
// "1m"), required with a rate.
func (l *QueueLimits) UnmarshalJSON(b []byte) error {
	r, err := admission.UnmarshalQueueLimits(b)
	if err != nil {
		return err
	}
	*l = QueueLimits{Rate: Rate{Limit: r.Rate, Per: r.Per}, Concurrency: r.Concurrency}
	return nil
}

// IsZero reports whether l limits nothing.
func (l QueueLimits) IsZero() bool { return l.Rate.Limit <= 0 && l.Concurrency <= 0 }

// String is l as the CLI prints it, e.g. "rate 50/1s, concurrency 4", or
// "none".
func (l QueueLimits) String() string {
	return admission.QueueLimitsString(l.rule())
}

func (l QueueLimits) rule() store.LimitRule {
	return store.LimitRule{Rate: l.Rate.Limit, Per: l.Rate.Per, Concurrency: l.Concurrency}
}
