// Package schedule is the periodic scheduler: it enqueues each periodic
// task's slots on time, exactly once however many processes share the
// store. Each (task, slot) is claimed by a compare-and-swap on the stored
// next run plus a unique (task, slot) row, in the same transaction that
// inserts the job (store.Store.PeriodicFire).
//
// Not API: import github.com/queuemax/queuemax instead.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/engine"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/robfig/cron/v3"
)

// Misfire policies: what the scheduler does with a slot whose time passed
// while no scheduler ran (more than the grace ago: half the interval,
// between 1s and 1m).
const (
	MisfireSkip    = "skip"     // drop missed slots and wait for the next one (the default)
	MisfireCatchUp = "catch_up" // one catch-up job for all missed slots
)

// Entry is one periodic task: exactly one of Every and Cron, and its
// misfire policy ("" is MisfireSkip).
type Entry struct {
	Task    string
	Every   time.Duration
	Cron    string
	Misfire string
}

// Parse parses a schedule: an interval (Every) or a standard cron spec,
// in UTC unless it names a zone. spec is how the store records it.
func Parse(every time.Duration, spec string) (sched cron.Schedule, stored string, err error) {
	switch {
	case (every > 0) == (spec != ""):
		return nil, "", errors.New("set exactly one of Every and Cron")
	case every < 0:
		return nil, "", errors.New("negative Every")
	case every > 0:
		return cron.Every(every), "@every " + max(every, time.Second).String(), nil
	}
	full := spec
	if !strings.HasPrefix(full, "CRON_TZ=") && !strings.HasPrefix(full, "TZ=") {
		full = "CRON_TZ=UTC " + full // UTC unless the spec names a zone
	}
	s, err := cron.ParseStandard(full)
	if err != nil {
		return nil, "", fmt.Errorf("cron %q: %w", spec, err)
	}
	return s, spec, nil
}

// Inserter enqueues a slot's job through the client's enqueue path (its
// defaults and insert middleware): it builds task's job at now and
// stores it with fire, which inserts it on shard 0 in the slot's
// transaction and returns its ID, zero if another scheduler fired the
// slot first.
type Inserter interface {
	InsertPeriodic(ctx context.Context, task string, now time.Time, fire func(context.Context, store.InsertParams) (store.JobID, error)) error
}

// Config is what a Scheduler needs.
type Config struct {
	Store   store.Store
	Entries []Entry
	Insert  Inserter
	// Events receives EventPeriodic and EventEnqueued for each job
	// fired; Wake is signalled after it (both optional).
	Events *engine.Events
	Wake   chan struct{}
	Now    func() time.Time
	Log    *slog.Logger
}

// entry is an Entry with its parsed schedule.
type entry struct {
	Entry
	sched cron.Schedule
	spec  string
}

// Scheduler enqueues the periodic tasks on time: Register once, then Tick
// at each slot (the engine's periodic service), or Run.
type Scheduler struct {
	cfg     Config
	entries []entry
	now     func() time.Time
}

// New checks the entries' schedules and returns their scheduler. Slots
// come due by the database's clock where the store has one (PostgreSQL),
// so that schedulers on hosts whose clocks disagree agree on when.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Scheduler{cfg: cfg, now: cfg.Now}
	if st := cfg.Store; st.Features().Clock {
		s.now = func() time.Time {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if t, err := st.Now(ctx); err == nil {
				return t
			}
			return cfg.Now()
		}
	}
	for _, e := range cfg.Entries {
		sched, spec, err := Parse(e.Every, e.Cron)
		if err != nil {
			return nil, fmt.Errorf("periodic task %q: %v", e.Task, err)
		}
		if e.Misfire == "" {
			e.Misfire = MisfireSkip
		}
		if e.Misfire != MisfireSkip && e.Misfire != MisfireCatchUp {
			return nil, fmt.Errorf("periodic task %q: misfire policy %q (want skip or catch_up)", e.Task, e.Misfire)
		}
		s.entries = append(s.entries, entry{Entry: e, sched: sched, spec: spec})
	}
	return s, nil
}

// Len is how many periodic tasks s schedules.
func (s *Scheduler) Len() int { return len(s.entries) }

// Now is the scheduler's clock.
func (s *Scheduler) Now() time.Time { return s.now() }

// Register stores every entry's schedule; unchanged ones keep their
// stored next run.
func (s *Scheduler) Register(ctx context.Context, now time.Time) error {
	for _, e := range s.entries {
		if err := s.cfg.Store.PeriodicRegister(ctx, store.PeriodicParams{Task: e.Task, Schedule: e.spec,
			Misfire: e.Misfire, Next: e.sched.Next(now), Now: now}); err != nil {
			return fmt.Errorf("register periodic task %s: %w", e.Task, err)
		}
	}
	return nil
}

// grace is how late a slot may fire and still count as on time.
func grace(sched cron.Schedule, slot time.Time) time.Duration {
	return min(time.Minute, max(time.Second, sched.Next(slot).Sub(slot)/2))
}

// Tick fires every due slot as of now and returns when the next one is
// due.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) (time.Time, error) {
	states, err := s.cfg.Store.PeriodicList(ctx)
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
		st, ok := byTask[e.Task]
		if !ok || st.Schedule != e.spec || st.Misfire != e.Misfire {
			if err := s.Register(ctx, now); err != nil {
				return time.Time{}, err
			}
			return s.Tick(ctx, now)
		}
		if !st.NextRun.After(now) {
			if err := s.fire(ctx, e, st.NextRun, now); err != nil {
				errs = append(errs, err)
			}
			continue // re-read on the next tick, which is soon
		}
		if st.NextRun.Before(soonest) {
			soonest = st.NextRun
		}
	}
	if len(errs) > 0 {
		return now.Add(time.Second), errors.Join(errs...)
	}
	for _, e := range s.entries {
		if st, ok := byTask[e.Task]; ok && !st.NextRun.After(now) {
			return now, nil // something fired: look again at once
		}
	}
	return soonest, nil
}

// fire handles a due slot: the latest slot not after now is enqueued,
// unless it is later than the grace and the policy skips misfires;
// earlier missed slots never fire. Then the next run moves past now.
func (s *Scheduler) fire(ctx context.Context, e entry, due, now time.Time) error {
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
	if now.Sub(latest) > grace(e.sched, latest) && e.Misfire == MisfireSkip {
		s.cfg.Log.WarnContext(ctx, "periodic slot missed; skipping to the next", "task", e.Task, "slot", latest, "next", next)
		// Skips the slot: no job to insert.
		_, _, err := s.cfg.Store.PeriodicFire(ctx, store.PeriodicFireParams{Task: e.Task, Due: due, Next: next,
			Job: store.InsertParams{Task: e.Task, Now: now}})
		if err != nil {
			return fmt.Errorf("fire periodic task %s: %w", e.Task, err)
		}
		return nil
	}
	var id store.JobID
	err := s.cfg.Insert.InsertPeriodic(ctx, e.Task, now, func(ctx context.Context, job store.InsertParams) (store.JobID, error) {
		var fired bool
		var err error
		id, fired, err = s.cfg.Store.PeriodicFire(ctx, store.PeriodicFireParams{Task: e.Task, Due: due, Slot: latest, Next: next, Job: job})
		if !fired {
			id = 0
		}
		return id, err
	})
	if err != nil {
		return fmt.Errorf("fire periodic task %s: %w", e.Task, err)
	}
	if id != 0 {
		s.cfg.Log.LogAttrs(ctx, slog.LevelDebug, "periodic task enqueued", slog.String("task", e.Task),
			slog.Int64("job_id", int64(id)), slog.Time("slot", latest))
		if s.cfg.Wake != nil {
			select {
			case s.cfg.Wake <- struct{}{}:
			default:
			}
		}
		if ev := s.cfg.Events; ev != nil {
			ev.Emit(ctx, engine.Event{Kind: queuemaxtype.EventPeriodic, JobID: id, Shard: id.Shard(), Task: e.Task, Slot: latest})
			ev.Emit(ctx, engine.Event{Kind: queuemaxtype.EventEnqueued, JobID: id, Shard: id.Shard(), Task: e.Task})
		}
	}
	return nil
}

// Run registers the schedules and fires slots on time until ctx ends
// (a process that enqueues periodic jobs but runs none).
func (s *Scheduler) Run(ctx context.Context) error {
	if len(s.entries) == 0 {
		return nil
	}
	if err := s.Register(ctx, s.now()); err != nil {
		return err
	}
	for {
		next, err := s.Tick(ctx, s.now())
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.WarnContext(ctx, "periodic scheduler", "err", err)
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
