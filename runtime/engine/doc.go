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
//   - the producer sizes claims by the backlog and runs each claim round
//     through the admission (runtime/admission: breakers, rate limiters,
//     global, per-key and queue limits, queue caps), then queues each
//     claimed batch for the workers, claiming the next while they finish
//     the last;
//   - the workers (worker.go), long-lived, ask the admission at each job's
//     start and end, run queued jobs through the Executor, tell the
//     breakers the outcome and finish failures;
//   - the acknowledger (acker.go) finishes the workers' successes
//     set-based, one Executor.Finish (one Store.Complete) per round,
//     retrying transient errors briefly;
//   - the heartbeater renews the leases of held jobs and cancels the ones
//     whose lease was lost;
//   - the rescuer recovers orphans (jobs of dead workers), after renewing
//     this engine's own leases;
//   - maintenance cleans up old jobs, raises alerts (Alerts), renames jobs
//     stored under earlier task names (Renames) and warns of tasks no live
//     worker runs; the registry keeps this Run's worker-registry entry;
//   - the periodic scheduler (runtime/schedule, through Periodic) enqueues
//     periodic tasks on time;
//   - the autoscaler varies the number of worker slots by the backlog.
//
// The engine reaches storage only through store.Store (plus the optional
// interfaces in runtime/store). What it shares with users (jobs, the
// control-flow errors, middleware, hooks, events) is in package
// queuemaxtype; handlers come in as Handler values. Orphan recovery and
// cleanup are the engine's own (Config.StuckTimeout, PruneParams); no
// function of the API comes in through Config.
//
// Not API: import github.com/queuemax/queuemax instead.
package engine
