package engine

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/store"
)

// producer claims jobs and queues them for the workers. Claim rounds are
// planned by the admission (runtime/admission: breakers, rate limiters,
// global and queue limits), so a task whose breaker is open or whose
// bucket is empty costs no claim and holds no worker.
//
// The producer does not hand jobs to workers one by one: a claim queues
// its whole batch on Engine.queue, long-lived workers take jobs from it,
// and the producer wakes only when the queue runs low (fewer jobs queued
// and running than lowWater), so the next claim overlaps with the end of
// the batch and with its acknowledgements (see acker).
type producer struct {
	e *Engine
	// sticky is the shard the last claim filled its batch from (-1: none)
	// and streak how many claims in a row did.
	sticky, streak int
	// lastVersion is the shards' data version, read before a round's
	// claims only when versioned: busy rounds skip the read, and a round
	// that finds nothing without it reads it and claims once more before
	// idling, so that no commit slips between the claim and the wait.
	lastVersion int64
	versioned   bool
	// size is the capacity claims fill up to: ClaimBatch, grown toward
	// ClaimMax by adapt; lastClaim is when the last full claim was made.
	size      int
	lastClaim time.Time
	// quietSince is when claims stopped finding jobs (zero: they find
	// some); idle backs its polling off by it.
	quietSince time.Time
}

func newProducer(e *Engine) *producer {
	return &producer{e: e, sticky: -1, size: e.cfg.ClaimBatch}
}

// growWindow is how quickly the workers must run half a batch for the
// next claim to double (see Config.ClaimMax).
const growWindow = 20 * time.Millisecond

// gatherWait bounds how long the producer waits for more free workers
// before a claim while jobs are running and claims do not prefetch. It is
// far below any real job's run time.
const gatherWait = time.Millisecond

func (p *producer) run(ctx context.Context) {
	e := p.e
	gather := time.NewTimer(time.Hour)
	defer gather.Stop()
	recheck := time.NewTimer(time.Hour)
	defer recheck.Stop()
	defer p.releaseQueued()
	for ctx.Err() == nil {
		e.ensureWorkers()
		limit := int(e.limit.Load())
		capacity, low := p.sizes(limit)
		e.lowWater.Store(int64(low))
		inflight := int(e.inflight.Load())
		if inflight >= low {
			// While limited queues prefetch (saturated ones), their rules
			// are read again every queueRulesRefresh as when claiming: a
			// rule changed by another process returns the prefetched jobs
			// to pending rather than run them under the old rule's slots.
			var tick <-chan time.Time
			if e.adm.QueueRulesActive() {
				recheck.Reset(admission.QueueRulesRefresh)
				tick = recheck.C
			}
			select {
			case <-ctx.Done():
			case <-e.slotFree:
			case <-tick:
				if e.adm.RefreshQueueRules(ctx, e.cfg.Now()) {
					p.releaseQueued()
				}
			}
			recheck.Stop()
			continue
		}
		// Without prefetch, wait up to gatherWait for a whole batch of
		// free workers while jobs run, so that claims take batches rather
		// than the first freed worker each (a claim is a write
		// transaction however few jobs it takes, and the jobs of one
		// batch finish close together).
		if want := min(limit, e.cfg.ClaimBatch); !p.ahead(limit) && capacity-inflight < want && inflight > 0 {
			gather.Reset(gatherWait)
		gathering:
			for capacity-int(e.inflight.Load()) < want {
				select {
				case <-ctx.Done():
					break gathering
				case <-e.slotFree:
				case <-gather.C:
					break gathering
				}
			}
			gather.Stop()
			if ctx.Err() != nil {
				continue
			}
		}
		asked := capacity - int(e.inflight.Load())
		claimed, retryIn, err := p.RunOnce(ctx, e.cfg.Now())
		p.adapt(asked, claimed, time.Now())
		switch {
		case err != nil:
			return // the rate limiter's wait ended with ctx
		case claimed > 0:
			p.versioned = false
			p.quietSince = time.Time{}
		case !p.versioned:
			p.versioned = true // read the version, then claim once more
		default:
			p.idle(ctx, retryIn)
			p.versioned = false
		}
	}
}

// ahead reports whether claims prefetch beyond the free workers.
func (p *producer) ahead(limit int) bool {
	return max(p.e.cfg.ClaimBatch, p.e.cfg.ClaimMax) > limit && p.e.adm.Prefetch()
}

// sizes returns how many jobs may be held queued or running at once
// (capacity) and the low-water mark below which the producer claims more.
// With prefetch, the next claim starts while at least a job per worker
// (and half the batch) is still queued, so workers do not wait for claims;
// without it, as soon as a worker is free. This is the claim planning's
// sizing step; plan decides what the room is claimed from.
func (p *producer) sizes(limit int) (capacity, low int) {
	if !p.ahead(limit) {
		return limit, limit
	}
	capacity = max(p.size, limit)
	return capacity, max(min(capacity, 2*limit), capacity/2)
}

// adapt grows or shrinks the claim size between ClaimBatch and ClaimMax:
// a full claim made within growWindow of the previous one (the workers ran
// half a batch that fast) doubles it, a claim after more than four windows
// halves it.
func (p *producer) adapt(asked, claimed int, now time.Time) {
	e := p.e
	if e.cfg.ClaimMax <= e.cfg.ClaimBatch || asked <= 0 {
		return
	}
	since := now.Sub(p.lastClaim)
	if claimed < asked {
		// The backlog is shallower than a claim: the size does not matter.
		if claimed == 0 {
			p.size = e.cfg.ClaimBatch
		}
		return
	}
	p.lastClaim = now
	switch {
	case since < growWindow:
		p.size = min(2*p.size, e.cfg.ClaimMax)
	case since > 4*growWindow:
		p.size = max(p.size/2, e.cfg.ClaimBatch)
	}
}

// releaseQueued returns the queued jobs that never started to pending,
// unspent, in one call.
func (p *producer) releaseQueued() {
	e := p.e
	var rjs []*runningJob
	for {
		select {
		case rj := <-e.queue:
			rjs = append(rjs, rj)
			continue
		default:
		}
		break
	}
	if len(rjs) == 0 {
		return
	}
	ls := make([]store.Lease, len(rjs))
	for i, rj := range rjs {
		ls[i] = Lease(rj.job)
	}
	for i, err := range e.cfg.Store.Release(context.WithoutCancel(e.jobCtx), ls) {
		if err != nil && !errors.Is(err, store.ErrLeaseLost) {
			e.out.fail(context.Background(), slog.LevelError, "releases", "return unstarted job to pending", err, "job_id", int64(rjs[i].job.ID))
		}
	}
	for _, rj := range rjs {
		e.adm.Drop(rj.job, rj.probe)
		e.dequeued()
		e.unhold(rj)
	}
}

// RunOnce is one claim round at now: for the room left below the
// capacity, the admission (runtime/admission) plans the claims, takes
// their starts, claims through the producer and queues the jobs for the
// workers. It returns how many jobs it claimed and, when tasks were left
// out, how soon one may be claimable again. Its error is the overall rate
// limiter's wait ending.
func (p *producer) RunOnce(ctx context.Context, now time.Time) (claimed int, retryIn time.Duration, err error) {
	e := p.e
	capacity, _ := p.sizes(int(e.limit.Load()))
	n := capacity - int(e.inflight.Load())
	if n <= 0 {
		return 0, time.Hour, nil
	}
	return e.adm.Round(ctx, n, now, p)
}

// Claim, Order, BeforeClaims, Queue and ReleaseQueued are the producer as
// the admission's claim path (admission.Claimer).
func (p *producer) Claim(ctx context.Context, tasks []string, max int, now time.Time) ([]*store.Job, error) {
	return p.claim(ctx, tasks, max, now)
}

// Order is the shards a claim visits.
func (p *producer) Order() []int { return p.claimOrder() }

// BeforeClaims reads the shards' data version before the round's claims,
// when the last round found nothing (see lastVersion).
func (p *producer) BeforeClaims(ctx context.Context) {
	if p.versioned {
		if v, err := p.e.cfg.Store.DataVersion(ctx); err == nil {
			p.lastVersion = v
		} else {
			p.versioned = false
		}
	}
}

// Queue holds a claimed job and queues it for the workers.
func (p *producer) Queue(j *store.Job, probe bool) {
	rj := p.e.hold(j, probe)
	p.e.inflight.Add(1)
	p.e.queue <- rj // never blocks: the queue holds the largest capacity
}

// ReleaseQueued returns the queued jobs that never started to pending.
func (p *producer) ReleaseQueued() { p.releaseQueued() }

// claim claims up to max jobs of tasks (nil: any task).
func (p *producer) claim(ctx context.Context, tasks []string, max int, now time.Time) ([]*store.Job, error) {
	e := p.e
	if len(tasks) == 1 && tasks[0] == "" && e.cfg.Tasks == nil {
		tasks = nil // the catch-all handler's group covers every task
	}
	// The claim runs to its end even when ctx ends meanwhile: a
	// PostgreSQL claim cancelled in flight may have committed on the
	// server while the client saw only the cancellation, leaving its
	// jobs processing under a lease nobody holds until orphan recovery.
	// A claim that returns is queued and, when the producer stops,
	// released (releaseQueued). One that hangs (an unreachable server)
	// is cancelled claimStopGrace after ctx ends, so that Run returns.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	grace := claimStopGrace
	defer context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancel) })()
	jobs, err := e.adm.ClaimQueues(cctx, store.ClaimParams{WorkerID: e.cfg.WorkerID, Max: max, Now: now, Tasks: tasks,
		Order: p.claimOrder()})
	if err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
		e.out.fail(ctx, slog.LevelWarn, "claims", "claim failed", err)
	} else if err == nil {
		e.out.ok(ctx, "claims")
	}
	// Stay on a shard that filled the batch: the next claim then joins the
	// group transaction that acknowledges this batch on that shard's
	// writer, one commit for both.
	switch {
	case len(jobs) == max && jobs[len(jobs)-1].Shard == p.sticky:
		p.streak++
	case len(jobs) == max:
		p.sticky, p.streak = jobs[len(jobs)-1].Shard, 1
	default:
		p.sticky, p.streak = -1, 0
	}
	return jobs, err
}

// claimStopGrace is how long a claim in flight may still take once the
// producer stops (see claim): far above a claim's time, far below a
// drain's.
var claimStopGrace = 2 * time.Second

// maxStreak bounds how many claims in a row start at the same shard, so
// that a shard with a steady inflow cannot starve the others.
const maxStreak = 8

// claimOrder returns the shards to visit: a fresh random order, led by the
// sticky shard while its streak lasts.
func (p *producer) claimOrder() []int {
	order := rand.Perm(p.e.cfg.Shards)
	if p.sticky < 0 || p.streak >= maxStreak {
		p.sticky, p.streak = -1, 0
		return order
	}
	for i, sh := range order {
		if sh == p.sticky {
			order[0], order[i] = order[i], order[0]
			break
		}
	}
	return order
}

// idle waits for a reason to claim again: a local enqueue, a commit by
// another connection (the store's data version, checked every
// PollInterval), a notification from the store, a scheduled job coming
// due, a left-out task becoming claimable (retryIn), or ctx's end.
func (p *producer) idle(ctx context.Context, retryIn time.Duration) {
	e := p.e
	st := e.cfg.Store
	retry := time.NewTimer(max(retryIn, time.Millisecond))
	defer retry.Stop()
	var due <-chan time.Time
	if t, ok, err := st.NextDue(ctx); err == nil && ok {
		timer := time.NewTimer(max(0, t.Sub(e.cfg.Now())) + time.Millisecond)
		defer timer.Stop()
		due = timer.C
	}
	// A full re-check now and then covers clock steps and missed signals.
	fallback := time.NewTimer(time.Second + rand.N(time.Second))
	defer fallback.Stop()
	// Poll every PollInterval at first; after idleBackoffAfter of quiet,
	// back off to idleMaxPolls times that (idleDeepPolls after
	// idleDeepAfter), so an idle worker costs little CPU while a busy one
	// still sees other processes' enqueues at once.
	if p.quietSince.IsZero() {
		p.quietSince = time.Now()
	}
	poll := time.NewTimer(p.pollInterval())
	defer poll.Stop()
	// A store that is notified of other processes' commits (PostgreSQL's
	// LISTEN/NOTIFY) wakes the producer at once, and its DataVersion moves
	// only when it closes Changes (its listener polls for what
	// notifications miss), so the producer does not poll it.
	var changes <-chan struct{}
	if st.Features().Notify {
		changes = st.Changes()
		poll.Stop()
		// A change between the last claim and Changes would be missed.
		if v, err := st.DataVersion(ctx); err != nil || v != p.lastVersion {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.cfg.Wake:
			return
		case <-e.adm.Freed():
			return
		case <-changes:
			return
		case <-due:
			return
		case <-retry.C:
			return
		case <-fallback.C:
			return
		case <-poll.C:
			v, err := st.DataVersion(ctx)
			if err != nil || v != p.lastVersion {
				return
			}
			poll.Reset(p.pollInterval())
		}
	}
}

// pollInterval is how long an idle producer waits between data-version
// checks, by how long no claim has found a job (quietSince, kept across
// idle waits so that the fallback re-check does not reset the back-off).
func (p *producer) pollInterval() time.Duration {
	d := p.e.cfg.PollInterval
	switch quiet := time.Since(p.quietSince); {
	case quiet > idleDeepAfter:
		return idleDeepPolls * d
	case quiet > idleBackoffAfter:
		return idleMaxPolls * d
	}
	return d
}

// Idle polling back-off: see idle. After idleDeepAfter of quiet the
// interval grows to idleDeepPolls×PollInterval, so a long-idle Run costs
// well under 1% of a core: each poll is a wake-up and a stat of every
// shard's WAL file, about 0.25 ms of CPU with 4 shards, most of it the
// wake-up (at 10×PollInterval a Run idled at 0.9% of a core, at 20×
// 0.65%).
const (
	idleBackoffAfter = 200 * time.Millisecond
	idleMaxPolls     = 4
	idleDeepAfter    = 2 * time.Second
	idleDeepPolls    = 20
)
