// Package queuemaxtype holds the types that the root package
// github.com/queuemax/queuemax re-exports, with their full documentation:
// read this package with go doc to see their fields and methods. They are
// the types the engine (runtime/engine), the storage layer (runtime/store)
// and users share:
//
//   - the stored rows and counts: Job, JobID, Status, Priority, DeadLetter,
//     ShardStats, JobCount, CleanupResult and RecoverResult;
//   - the control-flow errors a handler returns (Permanent, RetryAfter,
//     Cancel, Snooze) and the errors the queue records (PanicError,
//     TimeoutError, SnoozeLimitError), with Decision and FailOutcome;
//   - the middleware interfaces (EnqueueMiddleware, WorkMiddleware),
//     InsertJob and Hooks;
//   - Event and EventKind;
//   - WorkerInfo and RateLimitInfo, a worker registry entry, and TaskInfo;
//   - GlobalLimitInfo and CircuitBreakerInfo, a limit's and a breaker's
//     stored state as Stats shows them.
//
// Programs normally write queuemax.Job and so on, which are aliases of the
// types here.
//
// Like River's rivertype, it is a leaf package: it imports only the standard
// library, so any package may depend on it without cycles.
package queuemaxtype
