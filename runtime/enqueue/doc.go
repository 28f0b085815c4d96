// Package enqueue decides, once, what a new job is: its task's defaults and
// the enqueue's overrides resolved and checked (priority, retries, backoff
// base, timeout, tags, metadata, queue, unique key), the enqueue middleware
// run around the insert with its changes checked again, and the shard
// chosen. Every enqueue path of the root package goes through a Resolver:
// Enqueue, EnqueueMany and their results, the transactional variants,
// task handles, EnqueueFile, workflows and the periodic scheduler.
//
// Not API: import github.com/queuemax/queuemax instead.
package enqueue
