package queuemaxtype

import "time"

// Decision is how a failed attempt is handled (the root package's Classify
// returns it).
type Decision struct {
	// Permanent means no further attempt: the job goes to the dead-letter
	// queue.
	Permanent bool
	// Delay, when positive, overrides the exponential backoff.
	Delay time.Duration
	// Reason names the rule that decided, for logs.
	Reason string
}

// FailOutcome reports what became of a failed attempt (Client.Fail returns
// it, Hooks.OnError receives it).
type FailOutcome struct {
	// Dead is true when the job went to the dead-letter queue.
	Dead bool
	// Cancelled is true when the job ended cancelled (the error was
	// Cancel(err)); Dead is false then.
	Cancelled bool
	// Snoozed is true when the job was snoozed (the error was Snooze(d)):
	// it runs again at RetryAt without having spent the attempt.
	Snoozed bool
	// RetryAt is when the job runs again, if it is not dead.
	RetryAt time.Time
	// Decision is the classification of the error.
	Decision Decision
}

// The outcomes of one attempt, as the root package's Outcome names them.
const (
	OutcomeCompleted    = "completed"
	OutcomeRetry        = "retry"
	OutcomeSnoozed      = "snoozed"
	OutcomeCancelled    = "cancelled"
	OutcomeDeadLettered = "dead_lettered"
)
