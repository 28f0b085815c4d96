// Queuemax operates a queuemax data directory from the shell: statistics,
// listings, enqueueing, retries, the dead-letter queue, orphan recovery,
// purging, periodic tasks and waiting for the queue to drain.
//
// Install it with
//
//	go install github.com/queuemax/queuemax/cmd/queuemax@latest
//
// Usage:
//
//	queuemax [global flags] <command> [flags]
//
// The commands are:
//
//	stats      show job counts per shard and in total (--shard N, --json)
//	list       list jobs by status, or the dead-letter queue
//	           (--status pending|scheduled|processing|failed|completed|dead,
//	           --task T, --shard N, --limit N, --json)
//	enqueue    add a job (--task T --payload JSON [--priority P] [--key K] [--queue Q]
//	           [--at TIME | --in DURATION] [--max-retries N]
//	           [--unique-key KEY] [--json]),
//	           or every job of a file (--file jobs.jsonl: JSON Lines or a
//	           JSON array, all or nothing, the first bad line named)
//	retry      re-queue failed jobs (all, --shard N, or --job-id ID)
//	queues     list the named queues with their counts and paused state
//	           (--json)
//	pause      pause a queue on every worker of every process; running
//	           jobs finish (--queue NAME)
//	resume     resume a paused queue (--queue NAME)
//	workflows  list workflows (--status S, --name N, --limit N, --json),
//	           show one with each step's state (workflows show ID), or
//	           cancel one (workflows cancel ID)
//	dlq        list the dead-letter queue, or re-queue from it
//	           (dlq requeue --shard N --id ID, or --all)
//	recover    take back orphaned jobs now (--older-than DURATION)
//	purge      delete jobs by status (--status S, repeatable or a comma
//	           list) or finished jobs older than N days (--days N); asks
//	           first on a terminal, needs --yes otherwise
//	periodic   list periodic tasks with their next and last runs
//	wait       wait until no job is pending, scheduled or running, with
//	           progress (--timeout DURATION)
//	worker     run jobs; only in a binary built with a task registry
//	workers    list the live workers of the queue: tasks, concurrency,
//	           breakers and rate limits (--json)
//	dashboard  serve the web dashboard and the JSON admin API
//	           (--addr HOST:PORT, default 127.0.0.1:8080; --token-file FILE
//	           or env QUEUE_MAX_ADMIN_TOKEN enables actions; read-only
//	           without; --protect-reads)
//	help       show the help of a command
//
// Every command takes --help. The global flags, accepted before or after
// the command, are --data-dir DIR (default ./data) and --shards N (default:
// as many as the data dir holds). The runtime's environment variables
// apply too (DATA_DIR, NUM_SHARDS, QUEUE_MAX_RETRIES, RATE_LIMIT_MAX,
// STUCK_TIMEOUT, QUEUE_MAX_LOG_LEVEL and the others read by
// queuemaxenv.Config); flags override them.
//
// Output is a human table by default and JSON with --json. Errors are one
// line on standard error. The exit status is 0 on success, 1 on failure
// and 2 for a usage error: an unknown command or flag, a bad flag value,
// invalid JSON, an unknown task, a bad line in an enqueue file.
//
// Commands that only read (stats, list, periodic, wait, dlq list) open the
// data directory read-only and never create it. Commands that write
// refuse a directory that does not exist or holds no shard files, so that
// a mistyped --data-dir does not become an empty queue; enqueue and worker
// accept --create to make a new one. A --shards that does not match the
// data directory fails with queuemax.ErrShardMismatch and changes nothing.
//
// A Go program cannot load a function by name, so queuemax has no tasks
// and its worker command only explains how to get one: a worker binary is
// a main of one line over the generated registry, with the same commands
// plus worker (see package github.com/queuemax/queuemax/cli and
// examples/tasks/cmd/tasks):
//
//	func main() { os.Exit(cli.Main(os.Args[1:], tasks.Handlers())) }
//
// Without a registry, enqueue --task takes the task's full name, as
// stored in each job (github.com/you/app/tasks.SendEmail).
package main

import (
	"context"
	"os"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/cli"
	"github.com/queuemax/queuemax/queuemaxpg"
	"github.com/queuemax/queuemax/queuemaxprom"
)

func main() {
	os.Exit(program().Run(context.Background(), os.Args[1:]))
}

// program is the queuemax command line: the dashboard's GET /metrics and
// the PostgreSQL store of --dsn.
func program() *cli.Program {
	return &cli.Program{Name: "queuemax", Metrics: queuemaxprom.Handler, OpenPostgres: openPostgres}
}

func openPostgres(ctx context.Context, dsn, schema string, readOnly bool) (queuemax.Store, error) {
	return queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: schema, ReadOnly: readOnly})
}
