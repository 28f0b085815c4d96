package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// Claim claims up to max ready jobs for workerID, visiting shards in random
// order, highest priority first and FIFO within a shard. Each claimed job
// carries a fresh lease; acknowledge it with Complete or Fail (and keep it
// alive with Heartbeat) or orphan recovery takes it back after
// Config.StuckTimeout. Run does all of this for you; Claim is for programs
// that drive the queue by hand. When the client has handlers, only their
// tasks are claimed.
func (c *Client) Claim(ctx context.Context, workerID string, max int) ([]*Job, error) {
	if max < 1 {
		return nil, nil
	}
	return c.st.Claim(ctx, store.ClaimParams{WorkerID: workerID, Max: max, Now: c.now(), Tasks: c.names})
}

// Complete records the success of a claimed job and stores result (JSON
// encoded) if it is not nil; a job without a result is deleted, unless
// Config.CompletedRetention keeps it. A result that cannot be encoded
// fails the job for good instead. It returns ErrLeaseLost, changing
// nothing, if the claim no longer holds. Like Run and Work it finishes the
// attempt through the engine's one path (emitting EventCompleted), but as
// a manual acknowledgement it runs no Hooks.
func (c *Client) Complete(ctx context.Context, job *Job, result any) error {
	a := engine.Attempt{Job: job, Result: result}
	return c.exec.Finish(ctx, []*engine.Attempt{&a}, engine.FinishOpts{})[0]
}

// lease is the lease that fences an acknowledgement of j.
func lease(j *Job) store.Lease { return engine.Lease(j) }

// FailOutcome reports what Fail did with a job; see
// queuemaxtype.FailOutcome for its fields.
type FailOutcome = queuemaxtype.FailOutcome

// Fail records a failed attempt of a claimed job. The error is classified
// (see Classify): a permanent error, or a job that has used all its
// attempts, goes to the dead-letter queue; Cancel(err) ends it cancelled;
// Snooze(d) runs it again after d without spending the attempt; otherwise
// the job is retried after the backoff or the error's Retry-After delay.
// The decision and the write are one atomic, lease-fenced step: it returns
// ErrLeaseLost, changing nothing, if the claim no longer holds. As a
// manual acknowledgement it emits the outcome's event but runs no Hooks.
func (c *Client) Fail(ctx context.Context, job *Job, jobErr error) (FailOutcome, error) {
	a := engine.Attempt{Job: job, Err: jobErr}
	if jobErr == nil {
		a.Err = errors.New("unknown error") // a nil error still fails the attempt
	}
	err := c.exec.Finish(ctx, []*engine.Attempt{&a}, engine.FinishOpts{})[0]
	return a.Fail, err
}

// The outcomes of one attempt, as Outcome names them.
const (
	OutcomeCompleted    = queuemaxtype.OutcomeCompleted
	OutcomeRetry        = queuemaxtype.OutcomeRetry
	OutcomeSnoozed      = queuemaxtype.OutcomeSnoozed
	OutcomeCancelled    = queuemaxtype.OutcomeCancelled
	OutcomeDeadLettered = queuemaxtype.OutcomeDeadLettered
)

// Outcome names what becomes of an attempt of job whose handler returned
// err, as the client records it: OutcomeCompleted for nil, OutcomeCancelled
// for Cancel(err), OutcomeSnoozed for Snooze(d), OutcomeDeadLettered for a
// permanent error or the last attempt, else OutcomeRetry. A work middleware
// calls it with next's result (the metrics and tracing packages label
// executions with it). One case it cannot see: a snooze past
// Config.MaxSnoozes is recorded dead-lettered, and Outcome says snoozed.
func Outcome(job *Job, err error) string { return engine.Outcome(job, err) }

// Heartbeat renews the heartbeat of claimed jobs so that orphan recovery
// leaves them alone. Run does this by itself every
// Config.HeartbeatInterval. It returns ErrLeaseLost if any claim no longer
// holds (the others are still renewed), and ErrCancelRequested if Cancel
// was called for any of them.
func (c *Client) Heartbeat(ctx context.Context, jobs ...*Job) error {
	ls := make([]store.Lease, len(jobs))
	for i, j := range jobs {
		ls[i] = lease(j)
	}
	return errors.Join(c.st.Heartbeat(ctx, ls, c.now())...)
}

// Release returns claimed jobs to pending without spending an attempt.
func (c *Client) Release(ctx context.Context, jobs ...*Job) error {
	ls := make([]store.Lease, len(jobs))
	for i, j := range jobs {
		ls[i] = lease(j)
	}
	err := errors.Join(c.st.Release(ctx, ls)...)
	c.notify()
	return err
}

// Cancel cancels job id. A pending or scheduled job becomes cancelled at
// once and the result is StatusCancelled. A running job is asked to stop
// and the result is StatusProcessing: within a heartbeat interval the
// process running it (this one or another) cancels its handler's context
// with cause ErrJobCancelled, and the job ends cancelled, never retried
// (unless the handler succeeds first). A job that already finished is an
// error wrapping ErrJobFinished; an unknown id, ErrJobNotFound.
func (c *Client) Cancel(ctx context.Context, id JobID) (Status, error) {
	st, err := c.st.Cancel(ctx, id, c.now())
	if err != nil {
		return "", err
	}
	if st == StatusCancelled {
		c.emit(ctx, Event{Kind: EventCancelled, JobID: id, Shard: id.Shard()})
		// A step's cancel may end its workflow (workflow_client.go).
		engine.EmitWorkflowEnds(ctx, c.st, c.events, []JobID{id}, nil)
	} else if e := c.engine.Load(); e != nil {
		e.CancelLocal(id) // no need to wait for the heartbeat here
	}
	return st, nil
}

// AllShards, as RetryFailed's shard, selects every shard.
const AllShards = store.AllShards

// RetryFailed re-queues every failed (dead-lettered) job of one shard, or of
// all shards for AllShards, with a fresh attempt budget, and removes their
// dead-letter rows. It returns how many jobs it re-queued. Any other shard
// outside 0…Shards()-1 is ErrInvalidShard.
func (c *Client) RetryFailed(ctx context.Context, shard int) (int, error) {
	if shard != AllShards && (shard < 0 || shard >= c.cfg.Shards) {
		return 0, fmt.Errorf("%w: %d (valid: 0–%d, or AllShards)", ErrInvalidShard, shard, c.cfg.Shards-1)
	}
	n, err := c.st.RetryFailed(ctx, shard, c.now())
	if n > 0 {
		c.notify()
	}
	return n, err
}

// RetryJob re-queues one failed job as RetryFailed does. It returns
// ErrJobNotFound if no failed job has that ID. The job keeps the job steps
// it recorded unless Config.RequeueClearsSteps is set.
func (c *Client) RetryJob(ctx context.Context, id JobID) error {
	err := engine.RetryJob(ctx, c.st, id, c.now(), c.cfg.RequeueClearsSteps)
	if err == nil {
		c.notify()
	}
	return err
}

// RequeueDead re-queues the job behind dead-letter row dlqID of shard (see
// DeadLetters), re-creating it if its row was cleaned up, and returns its ID.
// The job keeps the job steps it recorded unless Config.RequeueClearsSteps
// is set (a re-created job has none).
func (c *Client) RequeueDead(ctx context.Context, shard int, dlqID int64) (JobID, error) {
	defaults, fallback := c.taskDefaults()
	id, err := c.st.RequeueDead(ctx, shard, dlqID, store.RequeueParams{Now: c.now(), Defaults: defaults, Fallback: fallback,
		ClearProgress: c.cfg.RequeueClearsSteps})
	if err == nil {
		c.notify()
	}
	return id, err
}

// taskDefaults returns the priority and max attempts a new job of each
// task gets when nothing overrides them (the enqueue resolver's base), and
// those of a task without a handler.
func (c *Client) taskDefaults() (map[string]store.TaskDefaults, store.TaskDefaults) {
	defaults := make(map[string]enqueue.Defaults, len(c.handlers))
	for name, h := range c.handlers {
		defaults[name] = h.Options.defaults()
	}
	return c.res.TaskDefaults(defaults)
}

// Cleanup deletes failed, cancelled and completed jobs that finished more
// than olderThan ago, and dead-letter rows as old. Zero applies the
// configured ages, as Run's maintenance does every hour (or every half
// Config.CompletedRetention when shorter): completed jobs older than
// Config.CompletedRetention, except those that stored a result, which are
// kept for CleanupAge at least (with RetentionOff only those exist); the
// others and dead letters older than Config.CleanupAge.
func (c *Client) Cleanup(ctx context.Context, olderThan time.Duration) (CleanupResult, error) {
	now := c.now()
	if olderThan > 0 {
		return c.st.Cleanup(ctx, now.Add(-olderThan))
	}
	return c.st.Prune(ctx, engine.PruneParams(now, c.cfg.CompletedRetention, c.cfg.CleanupAge))
}

// Purge deletes jobs with the given statuses and returns how many. With no
// status it deletes every job except running ones: a running job is only
// deleted when StatusProcessing is named, and then its worker's late
// acknowledgement fails with ErrLeaseLost. The dead-letter queue is kept.
func (c *Client) Purge(ctx context.Context, statuses ...Status) (int, error) {
	for _, s := range statuses {
		if _, err := store.ParseStatus(string(s)); err != nil {
			return 0, err
		}
	}
	return c.st.Purge(ctx, statuses)
}

// RecoverOrphans takes back jobs whose heartbeat is older than
// Config.StuckTimeout: they return to pending, or go to the dead-letter
// queue if that was their last attempt. Run calls it every
// Config.RecoveryInterval.
func (c *Client) RecoverOrphans(ctx context.Context) (RecoverResult, error) {
	now := c.now()
	res, err := c.st.RecoverOrphans(ctx, now.Add(-c.cfg.StuckTimeout), now)
	if res.Requeued > 0 {
		c.notify()
	}
	return res, err
}

// WaitUntilEmpty blocks until no job is pending, scheduled or running, or
// until ctx ends (returning its error). It checks every 50ms; a check that
// fails (an unreadable shard, an expired ctx) returns its error, never a
// false "empty".
func (c *Client) WaitUntilEmpty(ctx context.Context) error {
	return engine.WaitUntilEmpty(ctx, c.st)
}

// ListParams filters Jobs and DeadLetters. The zero value lists up to 100
// jobs of any status from every shard, newest first.
type ListParams struct {
	Status Status
	// Statuses, when set, lists jobs with any of these statuses (and
	// Status, if also set) in one read per shard, so a job that moves
	// between two of them while it is listed is listed, not missed.
	Statuses []Status
	Task     string
	// Tag, when set, lists only jobs with this tag (Opts.Tags); it does
	// not apply to DeadLetters.
	Tag string
	// Shard limits the listing to one shard; nil means all.
	Shard *int
	// Limit caps the merged result; zero means 100.
	Limit int
}

func (p ListParams) store(shards int) (store.ListParams, error) {
	sp := store.ListParams{Shard: store.AllShards, Status: p.Status, Statuses: p.Statuses, Task: p.Task, Tag: p.Tag, Limit: p.Limit}
	if p.Shard != nil {
		if *p.Shard < 0 || *p.Shard >= shards {
			return sp, fmt.Errorf("%w: %d (valid: 0–%d; nil Shard lists every shard)", ErrInvalidShard, *p.Shard, shards-1)
		}
		sp.Shard = *p.Shard
	}
	return sp, nil
}

// Jobs lists stored jobs, newest first; the limit applies to the merged
// list, not per shard.
func (c *Client) Jobs(ctx context.Context, p ListParams) ([]*Job, error) {
	if err := engine.CheckStatuses(append([]Status{p.Status}, p.Statuses...)...); err != nil {
		return nil, err
	}
	sp, err := p.store(c.cfg.Shards)
	if err != nil {
		return nil, err
	}
	jobs, err := c.st.Jobs(ctx, sp)
	if err == nil {
		c.fillLimitHeld(ctx, jobs)
		c.fillHeld(ctx, jobs)
	}
	return jobs, err
}

// FailedJobs lists up to limit failed jobs, newest first.
func (c *Client) FailedJobs(ctx context.Context, limit int) ([]*Job, error) {
	return c.Jobs(ctx, ListParams{Status: StatusFailed, Limit: limit})
}

// ProcessingJobs lists up to limit running jobs, newest first.
func (c *Client) ProcessingJobs(ctx context.Context, limit int) ([]*Job, error) {
	return c.Jobs(ctx, ListParams{Status: StatusProcessing, Limit: limit})
}

// DeadLetters lists dead-letter rows, newest first.
func (c *Client) DeadLetters(ctx context.Context, p ListParams) ([]*DeadLetter, error) {
	sp, err := p.store(c.cfg.Shards)
	if err != nil {
		return nil, err
	}
	return c.st.DeadLetters(ctx, sp)
}

// Stats returns queue statistics. Counts come from the status index, not
// from scanning payloads. Stats never reports a shard it could not read as
// zeros: the snapshot marks such a shard unhealthy with its error in
// PerShard, and Stats returns that snapshot together with a non-nil error
// (ErrShardUnavailable for each unreadable shard, or ctx's error); callers
// that only want a complete answer check the error alone. Tasks, Warnings
// and Workers come from the live worker registry, so Stats in a process
// that runs no workers (the CLI, a dashboard) shows the running workers'
// rate-limit states; the circuit breakers are read from the store, which
// every process shares (CircuitBreakers).
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, context.Cause(ctx)
	}
	ss, err := c.st.Stats(ctx)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{
		NumShards:       c.cfg.Shards,
		MaxRetries:      *c.cfg.MaxRetries,
		RateLimit:       c.cfg.RateLimit.Limit,
		TokensAvailable: -1,
		CircuitState:    "closed",
		IsHealthy:       true,
		PerShard:        ss,
	}
	if c.cfg.RateLimit.Limit > 0 {
		s.RateLimitPer = c.cfg.RateLimit.Per.String()
	}
	sum := queuemaxtype.SumShards(ss)
	s.Pending, s.Scheduled, s.Processing = sum.Pending, sum.Scheduled, sum.Processing
	s.Failed, s.Completed, s.DeadLetters = sum.Failed, sum.Completed, sum.DeadLetters
	s.TotalProcessed, s.TotalFailed, s.IsHealthy = sum.TotalProcessed, sum.TotalFailed, sum.Healthy
	errs := engine.ShardErrors(ss, ErrShardUnavailable)
	if err := ctx.Err(); err != nil {
		return s, context.Cause(ctx)
	}
	e := c.engine.Load()
	local := e != nil && c.running.Load()
	if local {
		fillStats(e.Engine, &s)
		s.RateLimits = e.workerInfo(c.now()).RateLimits
	}
	if err := c.fillRegistry(ctx, &s, local); err != nil {
		errs = append(errs, err)
	}
	if err := c.fillCircuits(ctx, &s); err != nil {
		errs = append(errs, err)
	}
	s.Degraded = engine.DegradedTasks(s.Circuits)
	if qs, err := c.Queues(ctx); err != nil {
		errs = append(errs, err)
	} else {
		s.Queues = qs
	}
	if s.GlobalLimits, err = c.globalLimits(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := c.fillWorkflowCounts(ctx, &s); err != nil { // workflow_client.go
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// Job returns one stored job, or ErrJobNotFound (a job that completed
// without a result is deleted).
func (c *Client) Job(ctx context.Context, id JobID) (*Job, error) {
	if err := c.checkJobID(id); err != nil {
		return nil, err
	}
	j, err := c.st.Job(ctx, id)
	if err == nil {
		c.fillLimitHeld(ctx, []*Job{j})
		c.fillHeld(ctx, []*Job{j})
	}
	return j, err
}

// checkJobID refuses, as ErrJobNotFound, an ID whose shard this queue does
// not have: no such job can exist.
func (c *Client) checkJobID(id JobID) error {
	if sh := id.Shard(); id <= 0 || sh < 0 || sh >= c.cfg.Shards {
		return fmt.Errorf("%w: job %d (no shard %d: the queue has shards 0–%d)", ErrJobNotFound, id, sh, c.cfg.Shards-1)
	}
	return nil
}

// Result returns the stored JSON result of a completed job: ErrNoResult if
// it has not completed or returned no result, ErrJobNotFound if no such job
// is stored.
func (c *Client) Result(ctx context.Context, id JobID) (json.RawMessage, error) {
	j, err := c.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	if j.Status != StatusCompleted || j.Result == nil {
		return nil, fmt.Errorf("%w: job %d is %s", ErrNoResult, id, j.Status)
	}
	return j.Result, nil
}
