// Package engine is the job-processing runtime behind queuemax.Client:
// the one path every job takes, and the services of Client.Run.
//
// A job's path (River's internal/jobexecutor and internal/jobcompleter
// are the model):
//
//   - Executor.Execute (exec.go) runs one attempt: handler lookup,
//     Hooks.OnStart, the work middleware, the task's timeout, in-process
//     retries, panics turned into a *PanicError;
//   - Executor.Finish (outcome.go) records how attempts ended: it encodes
//     results or classifies errors (Classify, Backoff, Decide), writes
//     completions and failures set-based, lease-fenced, then emits the
//     events (events.go) and runs Hooks.OnComplete or Hooks.OnError. Run's
//     workers and acknowledger, Client.Work, Client.Complete and
//     Client.Fail all end there.
//
// Run's services share one start/stop discipline, each with a
// runOnce(ctx, now) that tests call directly:
//
//   - the producer plans claims (breakers and rate limits decided at claim
//     time, sizes by the backlog) and queues each claimed batch for the
//     workers, claiming the next while they finish the last;
//   - the workers (worker.go), long-lived, run queued jobs through the
//     Executor, settle the breakers and finish failures;
//   - the acknowledger (acker.go) finishes the workers' successes
//     set-based, one Executor.Finish (one Store.Complete) per round,
//     retrying transient errors briefly;
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
// interfaces in runtime/store). What it shares with users (jobs, the
// control-flow errors, middleware, hooks, events) is in package
// queuemaxtype; handlers come in as Handler values. Orphan recovery and
// cleanup are the engine's own (Config.StuckTimeout, PruneParams); only the
// API's services still come in through Config: the alert check, the worker
// registry (Start, Services) and the periodic scheduler (Periodic).
//
// Not API: import github.com/queuemax/queuemax instead.
package engine
