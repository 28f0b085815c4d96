package store

// The one rule of "attempts exhausted → dead": a job whose attempts so far
// reach its MaxAttempts gets no further attempt and is dead-lettered. The
// engine applies it to a failed attempt (engine.Decide, through
// AttemptsSpent) and every store to a job whose worker was lost (orphan
// recovery, through AttemptsSpentSQL); nothing else decides it.

// AttemptsSpent reports whether a job that has made attempts of its
// maxAttempts may not run again.
func AttemptsSpent(attempts, maxAttempts int) bool { return attempts >= maxAttempts }

// AttemptsSpentSQL is AttemptsSpent as an SQL predicate over a store's
// columns (or expressions) for the attempts made and allowed, for the
// stores' orphan recovery; NOT (AttemptsSpentSQL(...)) selects the jobs
// that may run again.
func AttemptsSpentSQL(attempts, maxAttempts string) string {
	return "(" + attempts + " >= " + maxAttempts + ")"
}
