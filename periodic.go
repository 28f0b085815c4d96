package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/robfig/cron/v3"
)

// MisfirePolicy says what the scheduler does with a periodic slot whose time
// passed while no scheduler was running (more than the misfire grace ago:
// half the interval, between 1s and 1m).
type MisfirePolicy string

// Misfire policies.
const (
	// MisfireSkip drops missed slots and waits for the next one. It is the
	// default.
	MisfireSkip MisfirePolicy = "skip"
	// MisfireRunOnce runs one catch-up job for all missed slots, then
	// follows the schedule.
	MisfireRunOnce MisfirePolicy = "catch_up"
)

// PeriodicInfo describes one periodic task as the scheduler stored it.
type PeriodicInfo struct {
	Task     string    `json:"task"`
	Schedule string    `json:"schedule"` // "@every 1h0m0s" or the cron spec
	Misfire  string    `json:"misfire"`
	NextRun  time.Time `json:"next_run"`
	LastRun  time.Time `json:"last_run,omitzero"` // the last slot enqueued; zero if none
	// LastJobID is the job enqueued for LastRun, and LastOutcome its state:
	// "pending", "scheduled", "processing", "completed", "failed", or ""
	// if it never ran. A completed job without a result is deleted, so a
	// job that is gone reads "completed".
	LastJobID   JobID  `json:"last_job_id,omitzero"`
	LastOutcome string `json:"last_outcome,omitempty"`
}

// PeriodicTasks lists the periodic tasks registered in the data directory
// by any process, with their next and last runs.
func (c *Client) PeriodicTasks(ctx context.Context) ([]PeriodicInfo, error) {
	states, err := c.st.PeriodicList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]PeriodicInfo, len(states))
	for i, s := range states {
		p := PeriodicInfo{Task: s.Task, Schedule: s.Schedule, Misfire: s.Misfire, NextRun: s.NextRun, LastRun: s.LastRun, LastJobID: s.LastJobID}
		if s.LastJobID != 0 {
			j, err := c.st.Job(ctx, s.LastJobID)
			switch {
			case errors.Is(err, ErrJobNotFound):
				p.LastOutcome = string(StatusCompleted)
			case err != nil:
				return nil, err
			default:
				p.LastOutcome = string(j.Status)
			}
		}
		out[i] = p
	}
	return out, nil
}

// scheduleEntry is one periodic handler with its parsed schedule.
type scheduleEntry struct {
	h       *Handler
	sched   cron.Schedule
	spec    string
	misfire MisfirePolicy
}

// parsePeriodic parses a handler's schedule.
func parsePeriodic(p *Periodic) (cron.Schedule, string, error) {
	switch {
	case (p.Every > 0) == (p.Cron != ""):
		return nil, "", errors.New("set exactly one of Every and Cron")
	case p.Every < 0:
		return nil, "", errors.New("negative Every")
	case p.Every > 0:
		return cron.Every(p.Every), "@every " + max(p.Every, time.Second).String(), nil
	}
	spec := p.Cron
	if !strings.HasPrefix(spec, "CRON_TZ=") && !strings.HasPrefix(spec, "TZ=") {
		spec = "CRON_TZ=UTC " + spec // UTC unless the spec names a zone
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, "", fmt.Errorf("cron %q: %w", p.Cron, err)
	}
	return s, p.Cron, nil
}

// scheduler enqueues periodic tasks on time. Every process may run one:
// each (task, slot) is claimed in shard 0 by a compare-and-swap on the
// stored next run plus a unique (task, slot) row, in the same transaction
// that inserts the job, so each slot is enqueued exactly once.
type scheduler struct {
	c       *Client
	entries []scheduleEntry
	now     func() time.Time
}

func (c *Client) newScheduler() (*scheduler, error) {
	s := &scheduler{c: c, now: c.now}
	if dc := c.st; dc.Features().Clock {
		// Slots come due by the database's clock (PostgreSQL), so that
		// schedulers on hosts whose clocks disagree agree on when.
		s.now = func() time.Time {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if t, err := dc.Now(ctx); err == nil {
				return t
			}
			return c.now()
		}
	}
	for _, name := range c.names {
		h := c.handlers[name]
		if h == nil || h.Periodic == nil { // nil: Config.DefaultHandler
			continue
		}
		sched, spec, err := parsePeriodic(h.Periodic)
		if err != nil {
			return nil, fmt.Errorf("%w: periodic task %q: %v", ErrInvalidConfig, name, err)
		}
		m := h.Periodic.Misfire
		if m == "" {
			m = MisfireSkip
		}
		if m != MisfireSkip && m != MisfireRunOnce {
			return nil, fmt.Errorf("%w: periodic task %q: misfire policy %q (want skip or catch_up)", ErrInvalidConfig, name, m)
		}
		s.entries = append(s.entries, scheduleEntry{h: h, sched: sched, spec: spec, misfire: m})
	}
	return s, nil
}

// register stores every entry's schedule; unchanged ones keep their
// stored next run.
func (s *scheduler) register(ctx context.Context, now time.Time) error {
	for _, e := range s.entries {
		if err := s.c.st.PeriodicRegister(ctx, store.PeriodicParams{Task: e.h.Name, Schedule: e.spec,
			Misfire: string(e.misfire), Next: e.sched.Next(now), Now: now}); err != nil {
			return fmt.Errorf("register periodic task %s: %w", e.h.Name, err)
		}
	}
	return nil
}

// grace is how late a slot may fire and still count as on time.
func grace(sched cron.Schedule, slot time.Time) time.Duration {
	return min(time.Minute, max(time.Second, sched.Next(slot).Sub(slot)/2))
}

// tick fires every due slot as of now and returns when the next one is due.
func (s *scheduler) tick(ctx context.Context, now time.Time) (time.Time, error) {
	states, err := s.c.st.PeriodicList(ctx)
	if err != nil {
		return time.Time{}, err
	}
	byTask := make(map[string]store.PeriodicState, len(states))
	for _, st := range states {
		byTask[st.Task] = st
	}
	soonest := now.Add(time.Minute) // re-read now and then: others may reschedule
	var errs []error
	for _, e := range s.entries {
		st, ok := byTask[e.h.Name]
		if !ok || st.Schedule != e.spec || st.Misfire != string(e.misfire) {
			if err := s.register(ctx, now); err != nil {
				return time.Time{}, err
			}
			return s.tick(ctx, now)
		}
		if !st.NextRun.After(now) {
			if err := s.fire(ctx, e, st.NextRun, now); err != nil {
				errs = append(errs, err)
			}
			continue // re-read on the next tick, which is soon
		}
		soonest = minTime(soonest, st.NextRun)
	}
	if len(errs) > 0 {
		return now.Add(time.Second), errors.Join(errs...)
	}
	for _, e := range s.entries {
		if st, ok := byTask[e.h.Name]; ok && !st.NextRun.After(now) {
			return now, nil // something fired: look again at once
		}
	}
	return soonest, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// fire handles a due slot: the latest slot not after now is enqueued, unless
// it is later than the grace and the policy skips misfires; earlier missed
// slots never fire. Then the next run moves past now.
func (s *scheduler) fire(ctx context.Context, e scheduleEntry, due, now time.Time) error {
	latest := due
	for range 1_000_000 {
		n := e.sched.Next(latest)
		if n.After(now) {
			break
		}
		latest = n
	}
	next := e.sched.Next(latest)
	if !next.After(now) {
		next = e.sched.Next(now)
	}
	slot := latest
	if now.Sub(latest) > grace(e.sched, latest) && e.misfire == MisfireSkip {
		slot = time.Time{}
		s.c.log.WarnContext(ctx, "periodic slot missed; skipping to the next", "task", e.h.Name, "slot", latest, "next", next)
	}
	job, err := s.c.prepare(EnqueueParams{Task: e.h.Name, Payload: json.RawMessage(`{}`)})
	if err != nil {
		return err
	}
	job.Now = now // on shard 0 (prepare chooses none), fired with the slot
	onShard0 := func(ps []store.InsertParams) { ps[0].Shard = 0 }
	var id JobID
	var fired bool
	firePeriodic := func(ctx context.Context, ps []store.InsertParams) ([]JobID, error) {
		id, fired, err = s.c.st.PeriodicFire(ctx, store.PeriodicFireParams{Task: e.h.Name, Due: due, Slot: slot, Next: next, Job: ps[0]})
		if err != nil || !fired || id == 0 {
			return nil, err
		}
		return []JobID{id}, nil
	}
	if slot.IsZero() {
		_, err = firePeriodic(ctx, []store.InsertParams{job}) // skips the slot: no job to insert
	} else {
		_, err = s.c.insertVia(ctx, []store.InsertParams{job}, onShard0, firePeriodic)
	}
	if err != nil {
		return fmt.Errorf("fire periodic task %s: %w", e.h.Name, err)
	}
	if fired && !slot.IsZero() && id != 0 {
		s.c.log.LogAttrs(ctx, slog.LevelDebug, "periodic task enqueued", slog.String("task", e.h.Name),
			slog.Int64("job_id", int64(id)), slog.Time("slot", slot))
		s.c.notify()
		s.c.emit(ctx, Event{Kind: EventPeriodic, JobID: id, Shard: id.Shard(), Task: e.h.Name, Slot: slot})
		s.c.emit(ctx, Event{Kind: EventEnqueued, JobID: id, Shard: id.Shard(), Task: e.h.Name})
	}
	return nil
}

// Register, Tick and Now make the scheduler the engine's periodic service
// (runtime/engine runs it while Run claims).
func (s *scheduler) Register(ctx context.Context, now time.Time) error { return s.register(ctx, now) }

// Tick fires the slots due at now and returns when the next one is.
func (s *scheduler) Tick(ctx context.Context, now time.Time) (time.Time, error) {
	return s.tick(ctx, now)
}

// Now is the scheduler's clock.
func (s *scheduler) Now() time.Time { return s.now() }

// run registers the schedules and fires slots on time until ctx ends.
func (s *scheduler) run(ctx context.Context) error {
	if len(s.entries) == 0 {
		return nil
	}
	if err := s.register(ctx, s.now()); err != nil {
		return err
	}
	for {
		now := s.now()
		next, err := s.tick(ctx, now)
		if err != nil && ctx.Err() == nil {
			s.c.log.WarnContext(ctx, "periodic scheduler", "err", err)
		}
		timer := time.NewTimer(max(next.Sub(s.now()), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
	}
}

// RunScheduler runs only the periodic scheduler, without workers, until ctx
// ends. Run already runs it; use this in a process that should enqueue
// periodic jobs but not execute them. Any number of processes may run a
// scheduler on one data directory: each slot is enqueued exactly once.
func (c *Client) RunScheduler(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.cfg.ReadOnly {
		return ErrReadOnly
	}
	s, err := c.newScheduler()
	if err != nil {
		return err
	}
	return s.run(ctx)
}
