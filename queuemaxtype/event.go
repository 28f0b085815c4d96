package queuemaxtype

import "time"

// EventKind names a queue event. The names match queue-max's.
type EventKind string

// Event kinds.
const (
	// EventEnqueued follows every committed enqueue (one per job).
	EventEnqueued EventKind = "job_enqueued"
	// EventCompleted follows a committed completion.
	EventCompleted EventKind = "job_completed"
	// EventFailed follows a job's final failure: it was dead-lettered,
	// because the error was permanent or its attempts ran out.
	EventFailed EventKind = "job_failed"
	// EventRetried follows a failed attempt that will be retried.
	EventRetried EventKind = "job_retried"
	// EventSnoozed follows a handler returning Snooze(d): the job runs
	// again at RetryAt without having spent the attempt (Attempt is the
	// attempt that snoozed). A snooze past Config.MaxSnoozes dead-letters
	// the job and is an EventFailed instead.
	EventSnoozed EventKind = "job_snoozed"
	// EventCancelled follows a job ending cancelled: Client.Cancel of a
	// waiting job, or a running job stopped by Client.Cancel or returning
	// Cancel(err) (Attempt and Error are set then).
	EventCancelled EventKind = "job_cancelled"
	// EventAlert fires when the pending count crosses above
	// Config.AlertThreshold, and again at most once a minute while it stays
	// above.
	EventAlert EventKind = "alert"
	// EventCircuit follows a task's circuit breaker changing state (Task,
	// From, To), as the running process sees the stored breaker: every
	// process that runs the task emits it when it learns of the change.
	EventCircuit EventKind = "circuit_state_changed"
	// EventPeriodic follows the scheduler enqueueing a periodic task's run
	// for one scheduled time (Task, JobID, Slot).
	EventPeriodic EventKind = "periodic_enqueued"
	// EventQueuePaused follows Client.Pause on this client (Queue).
	EventQueuePaused EventKind = "queue_paused"
	// EventQueueResumed follows Client.Resume on this client (Queue).
	EventQueueResumed EventKind = "queue_resumed"
)

// EventWorkflowCompleted is emitted once per workflow run whose every step
// completed, over all processes: by the process that recorded the last
// step's end, or else (orphan recovery, queue-max) by one running Run.
const EventWorkflowCompleted EventKind = "workflow_completed"

// EventWorkflowFailed is emitted once per workflow that ended with a step
// failed or cancelled (Error says which: "failed" or "cancelled" when
// CancelWorkflow cancelled it), once per workflow run over all processes,
// as EventWorkflowCompleted.
const EventWorkflowFailed EventKind = "workflow_failed"

// EventKinds lists every kind.
var EventKinds = []EventKind{EventEnqueued, EventCompleted, EventFailed, EventRetried, EventSnoozed, EventCancelled, EventAlert, EventCircuit, EventPeriodic, EventQueuePaused, EventQueueResumed, EventWorkflowCompleted, EventWorkflowFailed}

// Event describes something that happened to the queue. Only the fields
// that apply to its Kind are set.
type Event struct {
	Kind    EventKind
	Time    time.Time
	JobID   JobID
	Shard   int
	Task    string
	Attempt int       // the attempt that ended (completed, failed, retried, snoozed, cancelled while running)
	Error   string    // failed, retried, cancelled while running
	RetryAt time.Time // retried, snoozed: when the job runs again
	// Alert fields.
	AlertType string // "QUEUE_SIZE"
	Pending   int64
	Threshold int
	// Circuit fields: the breaker states, "closed", "open" or "half_open".
	From, To string
	// Periodic fields: the scheduled time the job was enqueued for.
	Slot time.Time
	// Queue is the queue paused or resumed.
	Queue string
	// Workflow fields: the workflow (queuemax.WorkflowID) and its name.
	Workflow     int64
	WorkflowName string
}
