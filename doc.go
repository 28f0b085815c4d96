// Package queuemax runs durable background jobs on an embedded, sharded
// SQLite store: no server to run, one WAL file per shard, typed task stubs
// generated from annotated functions. It is the Go counterpart of the Python
// library queue-max 0.2.0, reads and writes the same on-disk schema, and
// fixes its known weaknesses.
//
// # Tasks
//
// Annotate a plain function and run go generate:
//
//	//go:generate go tool queuemax-gen
//
//	// SendEmail delivers one message.
//	//
//	//queuemax:task priority=2 retries=5 timeout=30s
//	func SendEmail(ctx context.Context, to, subject string) error { ... }
//
// The generator (cmd/queuemax-gen) writes queuemax_gen.go with a typed
// handle per task (SendEmailTask with Delay, ScheduleAt, ScheduleIn, Map and
// MapArgs, each with a Tx form, plus With and Call), its payload struct
// (SendEmailArgs), the Handlers for Config.Handlers, and New, which binds
// every handle to a Client.
//
// Without the generator, Define builds a Handler from a typed function and
// NewTask a typed handle; Client.Enqueue takes any JSON-object payload.
//
// # Running a client
//
//	c, err := queuemax.Open(ctx, queuemax.Config{Dir: "data", Handlers: tasks.Handlers()})
//	if err != nil { ... }
//	defer c.Close()
//	t := tasks.New(c)
//	id, err := t.SendEmail.Delay(ctx, "a@example.com", "Hi")
//	err = c.Run(ctx) // blocks; cancel ctx to drain and stop
//
// Open does I/O but starts no goroutine; Run owns every goroutine it starts
// and returns only after all have exited. A Config works at its zero value
// (six shards in ./data); queuemaxenv.Config reads queue-max's environment
// variables.
//
// # Types
//
// Job, JobID, Status, Priority, DeadLetter, ShardStats, JobCount,
// CleanupResult and RecoverResult are aliases of the types in package
// github.com/queuemax/queuemax/queuemaxtype, which documents their fields
// and methods in full: go doc github.com/queuemax/queuemax/queuemaxtype.Job.
// Write them as queuemax.Job and so on. The documentation of
// CircuitBreaker, CircuitBreakerConfig, CircuitState, CircuitOpenError,
// RateLimiter, RateLimiterStats and Autoscale is in packages runtime/breaker,
// runtime/ratelimit and runtime/scale, which only this package should
// import.
//
// # Delivery
//
// A job is durable once its enqueue returns. Claims are atomic per shard
// (one UPDATE … RETURNING), so two workers, in one process or several,
// never hold the same job. Every claim carries a fresh lease token; Run
// renews running jobs' heartbeats, and a worker whose job was taken back by
// orphan recovery has its late completion or failure rejected with
// ErrLeaseLost. Execution is at least once: a job whose worker dies is run
// again after Config.StuckTimeout.
//
// # Retries and the dead-letter queue
//
// A failed attempt is retried after Config.RetryDelay·2^(n−1) ±20%, capped
// at one hour, until the job's retries are used up; then it goes to the
// dead-letter queue. Errors are classified by type (see Classify):
// Permanent(err) and 4xx statuses skip the retries, RetryAfter(d, err)
// sets the delay.
//
// # Job steps
//
// Step and Do make parts of a handler resumable: a step's typed result is
// stored, fenced by the job's lease, on the attempt where it succeeds, and
// every later attempt of the job returns it without running the step again
// (docs/steps.md). SetCursor records a long loop's position within a step:
//
//	receipt, err := queuemax.Step(ctx, "charge", func(ctx context.Context) (Receipt, error) {
//		return payments.Charge(ctx, order)
//	})
//
// # Unique jobs
//
// A task annotated unique=args (or unique=key with Opts.UniqueKey, or
// unique_for=1h; see UniqueOpts) inserts no second job while one with the
// same key is pending, scheduled or processing: the enqueue returns the
// stored job's ID with a nil error, and the result variants report
// Duplicate (a unique task's generated DelayResult and MapArgsResults,
// Client.EnqueueResult, Client.EnqueueManyResults). The store's unique
// index decides, so the answer holds across processes:
//
//	r, err := t.SyncUser.DelayResult(ctx, 42)
//	if err == nil && r.Duplicate {
//		// already queued as r.ID
//	}
//
// # Periodic tasks
//
// A //queuemax:periodic function (or a Handler with Periodic set) runs on a
// schedule:
//
//	//queuemax:periodic cron="0 3 * * *" misfire=catch_up
//	func NightlyReport(ctx context.Context) error { ... }
//
// Run starts the scheduler; RunScheduler runs it alone. Any number of
// processes may run it on one data directory: each scheduled time is
// claimed in the store with a unique key, in the transaction that inserts
// the job, so it is enqueued exactly once. PeriodicTasks lists next and
// last runs.
//
// # Events
//
// Client.Subscribe returns a channel of the client's events (job_enqueued,
// job_completed, job_retried, job_snoozed, job_cancelled, job_failed,
// alert, circuit_state_changed, periodic_enqueued) and a function that
// cancels it:
//
//	events, cancel := c.Subscribe(queuemax.EventCompleted, queuemax.EventFailed)
//	defer cancel()
//	for e := range events { ... }
//
// Sends never block: a reader that falls behind its buffer
// (SubscribeConfig.ChanSize) misses events, counted by Client.EventStats,
// and the queue goes on. WithoutEvents silences the calls made with one
// context. See ExampleClient_Subscribe.
//
// # Testing
//
// Package queuemaxtest opens a client on a temporary store
// (queuemaxtest.NewClient), asserts typed jobs (RequireEnqueued[A],
// RequireNotEnqueued[A]) and works them synchronously in the test
// (Drain, WorkOne), through Client.Work.
//
// # Middleware
//
// Config.Middleware wraps enqueues (EnqueueMiddleware: see and change the
// jobs, their Metadata included, before they are inserted) and executions
// (WorkMiddleware: wrap the handler), as River's middleware does; see
// Example_middleware. Packages queuemaxprom and queuemaxotel build
// Prometheus metrics and OpenTelemetry traces on it, so that this package
// depends on neither.
//
// # Shutdown
//
// Cancelling Run's context stops claiming, lets running jobs finish for up
// to Config.DrainTimeout, then cancels their contexts and returns the
// unfinished jobs to pending without spending an attempt.
package queuemax
