// Package engine is the job-processing runtime behind queuemax.Client.Run:
// a few services with one start/stop discipline, each with a runOnce(ctx,
// now) that tests call directly.
//
//   - the producer plans claims (breakers and rate limits decided at claim
//     time, sizes by the backlog) and queues each claimed batch for the
//     workers, claiming the next while they finish the last;
//   - the workers, long-lived, run queued jobs and record failures;
//   - the acknowledger commits the workers' successes set-based, one
//     Store.Complete per round, retrying transient errors briefly;
//   - the heartbeater renews the leases of held jobs and cancels the ones
//     whose lease was lost;
//   - the rescuer recovers orphans (jobs of dead workers), after renewing
//     this engine's own leases;
//   - maintenance cleans up old jobs, raises alerts and refreshes the
//     worker registry;
//   - the periodic scheduler enqueues periodic tasks on time;
//   - the autoscaler varies the number of worker slots by the backlog.
//
// The engine reaches storage only through store.Store (plus the optional
// interfaces in runtime/store), and everything it needs from the API
// (handlers, hooks, middleware, events) through the funcs of Config.
//
// Not API: import github.com/queuemax/queuemax instead.
package engine
