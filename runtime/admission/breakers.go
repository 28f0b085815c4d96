package admission

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
)

// breakerRefresh is how long a process trusts its copy of the stored
// breakers before it reads them again (one read of a small table, at the
// next claim round): another process's open or close reaches it within
// that time. Its own changes reach its copy at once.
var breakerRefresh = time.Second

// sharedBreakers drives the tasks' circuit breakers through the store, so
// that every process (and the dashboard) sees one breaker per task. The
// claim planner reads a copy of the stored rows refreshed every
// breakerRefresh (no query per job while a breaker is closed); outcomes
// that count (a dependency failure, a success after failures, a probe's
// end) are written in batches: a worker that finds no write in flight
// writes every outcome gathered so far in one transaction, and others
// gather theirs meanwhile. The stored row is a breaker's only state:
// Stats, the start check and the circuit_state_changed events read the
// copy, and an event follows each change the copy sees.
type sharedBreakers struct {
	e     *Controller
	st    store.BreakerStore
	owner string // this engine's probe token: its worker ID and a random suffix
	pols  map[string]breaker.Policy
	off   map[string]bool

	mu      sync.Mutex
	rows    map[string]store.BreakerRow // by breaker name
	wrote   map[string]time.Time        // monotonic: when this engine last wrote each row (store)
	readAt  time.Time                   // monotonic: when rows were last read
	pending map[string]*breaker.Outcomes
	marks   []store.DependencyMark // jobs whose attempt failed on a dependency, to write
	seen    map[string]*seenState  // the state each breaker was last seen in, for events and Stats

	flushMu    sync.Mutex
	notifyMu   sync.Mutex  // orders the change events as the copy saw the changes
	refreshing atomic.Bool // a starting worker reads the rows again (holds)
	// For holds' lock-free path: how many rows of the copy are not
	// closed, and when the rows were last read (monoNow).
	notClosed atomic.Int32
	readMono  atomic.Int64
}

// seenState is what the copy saw of one breaker over time.
type seenState struct {
	state     string
	changes   uint64
	openedAt  time.Time // monotonic: when it was last seen opening
	openTotal time.Duration
}

// change is one state change of a breaker, for its event.
type change struct{ name, from, to string }

func newSharedBreakers(e *Controller) *sharedBreakers {
	s := &sharedBreakers{
		e:       e,
		st:      e.cfg.Store,
		owner:   e.cfg.WorkerID + "#" + strconv.FormatUint(rand.Uint64()%1e9, 36),
		pols:    make(map[string]breaker.Policy, len(e.cfg.Breakers)),
		off:     make(map[string]bool),
		rows:    make(map[string]store.BreakerRow),
		wrote:   make(map[string]time.Time),
		pending: make(map[string]*breaker.Outcomes),
		seen:    make(map[string]*seenState, len(e.cfg.Breakers)),
	}
	for name, p := range e.cfg.Breakers {
		if p.ProbeTTL <= 0 {
			p.ProbeTTL = p.Timeout
		}
		s.pols[name] = p
		s.seen[name] = &seenState{state: store.BreakerClosed}
		if p.Threshold <= 0 {
			s.off[name] = true
		}
	}
	return s
}

// BreakerOwner is the token this engine's probes are held under.
func (c *Controller) BreakerOwner() string { return c.brk.owner }

// nameOf returns the breaker that guards task.
func (s *sharedBreakers) nameOf(task string) string {
	if _, ok := s.pols[task]; ok {
		return task
	}
	return ""
}

// refresh re-reads the stored rows when the copy is older than
// breakerRefresh (or always, with force).
func (s *sharedBreakers) refresh(ctx context.Context, force bool) {
	s.mu.Lock()
	stale := force || s.readAt.IsZero() || time.Since(s.readAt) >= breakerRefresh
	s.mu.Unlock()
	if !stale {
		return
	}
	start := time.Now()
	rows, err := s.st.BreakerList(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.e.out.Fail(ctx, slog.LevelWarn, "breakers read", "read circuit breakers", err)
		}
		s.mu.Lock()
		s.readAt = time.Now() // retry at the next refresh, not every round
		s.readMono.Store(monoNow())
		s.mu.Unlock()
		return
	}
	byName := make(map[string]store.BreakerRow, len(rows))
	for _, r := range rows {
		if _, ok := s.pols[r.Task]; ok {
			byName[r.Task] = r
		}
	}
	s.mu.Lock()
	for name, at := range s.wrote {
		if at.After(start) {
			// Written by this engine while the list was read: the copy
			// is newer than what the list saw.
			if r, ok := s.rows[name]; ok {
				byName[name] = r
			}
		}
	}
	s.rows, s.readAt = byName, time.Now()
	s.readMono.Store(monoNow())
	s.recount()
	s.notify(s.changes(byName, true))
}

// changes notes the states of rows in the copy's history (all: the
// breakers without a row are closed) and returns the changes since each
// was last seen. s.mu must be held.
func (s *sharedBreakers) changes(rows map[string]store.BreakerRow, all bool) []change {
	var out []change
	now := time.Now()
	for name, seen := range s.seen {
		r, ok := rows[name]
		if !ok && !all || s.off[name] {
			continue
		}
		to := r.State
		if !ok || to == "" {
			to = store.BreakerClosed
		}
		if to == seen.state {
			continue
		}
		if seen.state == store.BreakerOpen {
			seen.openTotal += now.Sub(seen.openedAt)
		}
		if to == store.BreakerOpen {
			seen.openedAt = now
		}
		out = append(out, change{name: name, from: seen.state, to: to})
		seen.state = to
		seen.changes++
	}
	return out
}

// notify unlocks s.mu and reports cs, in the order the copy saw them:
// a warning and a circuit_state_changed event each.
func (s *sharedBreakers) notify(cs []change) {
	if len(cs) == 0 {
		s.mu.Unlock()
		return
	}
	s.notifyMu.Lock()
	s.mu.Unlock()
	defer s.notifyMu.Unlock()
	for _, c := range cs {
		s.e.log.Warn("circuit breaker changed state", "task", c.name, "from", c.from, "to", c.to)
		if ev := s.e.cfg.Events; ev != nil {
			ev.Emit(context.Background(), queuemaxtype.Event{Kind: queuemaxtype.EventCircuit, Task: c.name, From: c.from, To: c.to})
		}
	}
}

// holds reports whether task's breaker holds a job of it that is not its
// probe: open or half-open. A job claimed while the breaker was closed
// does not start once it has opened. It reads the copy, read again when
// it is older than breakerRefresh (by one starting worker at a time, the
// others read the copy meanwhile), so that a breaker another process
// opened holds the starts within about breakerRefresh even while this
// process plans no claim (its workers run prefetched jobs).
func (s *sharedBreakers) holds(task string, probe bool) bool {
	name := s.nameOf(task)
	if probe || s.off[name] {
		return false
	}
	if at := s.readMono.Load(); at != 0 && time.Duration(monoNow()-at) >= breakerRefresh && s.refreshing.CompareAndSwap(false, true) {
		s.refresh(s.e.jobCtx(), false)
		s.refreshing.Store(false)
	}
	if s.notClosed.Load() == 0 {
		return false // every breaker closed: the hot path takes no lock
	}
	s.mu.Lock()
	r, ok := s.rows[name]
	s.mu.Unlock()
	return ok && !r.Closed()
}

// recount counts the rows of the copy that are not closed; s.mu is held.
func (s *sharedBreakers) recount() {
	n := 0
	for _, r := range s.rows {
		if !r.Closed() {
			n++
		}
	}
	s.notClosed.Store(int32(n))
}

// monoBase and monoNow are a monotonic clock in nanoseconds, for atomics.
var monoBase = time.Now()

func monoNow() int64 { return int64(time.Since(monoBase)) + 1 }

// stats returns breaker name's figures as last seen, at now.
func (s *sharedBreakers) stats(name string, now time.Time) breaker.Stats {
	p := s.pols[name]
	if s.off[name] {
		return breaker.Stats{State: breaker.Closed, Threshold: p.Threshold, Timeout: p.Timeout}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[name]
	st := breaker.Stats{State: breaker.StateOf(r), Failures: r.Failures, Threshold: p.Threshold, Timeout: p.Timeout,
		ProbeInFlight: r.State == store.BreakerHalfOpen && r.ProbeOwner != ""}
	if st.State == breaker.Open && r.Until.After(now) {
		st.RecoveryRemaining = r.Until.Sub(now)
	}
	if seen := s.seen[name]; seen != nil {
		st.StateChanges, st.TotalOpen = seen.changes, seen.openTotal
		if seen.state == store.BreakerOpen {
			st.TotalOpen += time.Since(seen.openedAt)
		}
	}
	return st
}

// BreakerStats returns each task breaker's figures as the engine last saw
// its stored row (at most breakerRefresh old), by name, and the names
// sorted.
func (c *Controller) BreakerStats() (map[string]breaker.Stats, []string) {
	now := c.cfg.Now()
	out := make(map[string]breaker.Stats, len(c.order))
	for _, name := range c.order {
		out[name] = c.brk.stats(name, now)
	}
	return out, c.order
}

// gate says what the round may claim of breaker name at now, and for a
// hold how soon that may change.
func (s *sharedBreakers) gate(ctx context.Context, name string, now time.Time) (breaker.Gate, time.Duration) {
	if s.off[name] {
		return breaker.GateAllow, 0
	}
	s.refresh(ctx, false)
	s.mu.Lock()
	r, ok := s.rows[name]
	s.mu.Unlock()
	if !ok {
		return breaker.GateAllow, 0
	}
	g, d := breaker.Check(r, now)
	if g == breaker.GateHold && r.State == store.BreakerHalfOpen {
		d = min(d, breakerRefresh) // the probe may end any time
	}
	return g, d
}

// takeProbe tries to take the probe of breaker name for this engine.
func (s *sharedBreakers) takeProbe(ctx context.Context, name string, now time.Time) bool {
	var got bool
	rows, err := s.st.BreakerUpdate(ctx, []string{name}, func(r *store.BreakerRow) bool {
		got = breaker.TakeProbe(r, s.owner, s.pols[name], now)
		return got
	})
	if err != nil {
		s.e.out.Fail(ctx, slog.LevelWarn, "breaker probes", "take circuit breaker probe", err, "task", name)
		return false
	}
	s.store(rows)
	return got
}

// store puts rows just written or read into the copy.
func (s *sharedBreakers) store(rows []store.BreakerRow) {
	m := make(map[string]store.BreakerRow, len(rows))
	s.mu.Lock()
	now := time.Now()
	for _, r := range rows {
		s.rows[r.Task] = r
		s.wrote[r.Task] = now
		m[r.Task] = r
	}
	s.recount()
	s.notify(s.changes(m, false))
}

// record notes the outcome of an attempt of job j (err nil: a success);
// probe is set when the job was its breaker's probe. A counted failure
// also marks the job (for the probe's choice, see ClaimProbe). Only dependency failures
// count (DependencyFailure); a success is written only when the breaker
// counts failures or is not closed; other failures count for nothing,
// but a probe's end is always written (its hold is released).
func (s *sharedBreakers) record(j *store.Job, err error, probe bool) {
	name := s.nameOf(j.Task)
	if s.off[name] {
		return
	}
	counted := err != nil && DependencyFailure(err)
	s.mu.Lock()
	o := s.pending[name]
	r := s.rows[name]
	switch {
	case counted:
	case err == nil && (probe || o != nil || r.Failures > 0 || !r.Closed()):
	case probe:
	default:
		s.mu.Unlock()
		return // nothing to write: the hot path of a healthy task
	}
	if o == nil {
		o = &breaker.Outcomes{Owner: s.owner}
		s.pending[name] = o
	}
	switch {
	case counted:
		o.Failures++
		o.LastError = err.Error()
		s.marks = append(s.marks, store.DependencyMark{ID: j.ID, Attempt: j.Attempts})
	case err == nil:
		o.Success, o.Failures = true, 0
	}
	if probe {
		o.ProbeDone = true
	}
	s.mu.Unlock()
	s.flush()
}

// releaseProbe frees the probe of task's breaker (its job never ran).
func (s *sharedBreakers) releaseProbe(task string) {
	name := s.nameOf(task)
	if s.off[name] {
		return
	}
	s.mu.Lock()
	o := s.pending[name]
	if o == nil {
		o = &breaker.Outcomes{Owner: s.owner}
		s.pending[name] = o
	}
	o.ProbeDone = true
	s.mu.Unlock()
	s.flush()
}

// flush writes the gathered outcomes, unless another goroutine is
// writing (it writes them next).
func (s *sharedBreakers) flush() {
	for {
		if !s.flushMu.TryLock() {
			return
		}
		s.mu.Lock()
		batch, marks := s.pending, s.marks
		s.pending, s.marks = make(map[string]*breaker.Outcomes), nil
		s.mu.Unlock()
		if len(batch) > 0 {
			s.write(batch, marks)
		}
		s.flushMu.Unlock()
		s.mu.Lock()
		more := len(s.pending) > 0
		s.mu.Unlock()
		if !more {
			return
		}
	}
}

// write applies one batch in one store transaction.
func (s *sharedBreakers) write(batch map[string]*breaker.Outcomes, marks []store.DependencyMark) {
	names := make([]string, 0, len(batch))
	for name := range batch {
		names = append(names, name)
	}
	now := s.e.cfg.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.e.jobCtx()), 30*time.Second)
	defer cancel()
	rows, err := s.st.BreakerUpdate(ctx, names, func(r *store.BreakerRow) bool {
		o := batch[r.Task]
		if o == nil {
			return false
		}
		return breaker.Apply(r, *o, s.pols[r.Task], now)
	})
	if err != nil {
		s.e.out.Fail(context.Background(), slog.LevelWarn, "breaker outcomes", "record circuit breaker outcomes", err, "tasks", names)
		return
	}
	s.store(rows)
	if len(marks) > 0 {
		if err := s.st.MarkDependencyFailures(ctx, marks); err != nil {
			s.e.out.Fail(context.Background(), slog.LevelWarn, "dependency marks", "mark dependency failures", err)
		}
	}
}

// claimFor claims up to max jobs for group g: a probe group claims its
// one job through the store's ClaimProbe, which prefers a job that never
// ran, so that a job that failed on its own input does not decide the
// probe while others wait.
func (c *Controller) claimFor(ctx context.Context, cl Claimer, g claimGroup, max int, now time.Time) ([]*store.Job, error) {
	if !g.probe {
		return cl.Claim(ctx, g.tasks, max, now)
	}
	tasks := g.tasks
	if len(tasks) == 1 && tasks[0] == "" && c.cfg.Tasks == nil {
		tasks = nil // the catch-all handler's breaker covers every task
	}
	// Like claim: the claim runs to its end even when ctx ends (it is
	// queued, then released).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	jobs, err := c.brk.st.ClaimProbe(cctx, store.ClaimParams{WorkerID: c.cfg.WorkerID, Max: 1, Now: now, Tasks: tasks,
		Queues: c.queues.limits()})
	if err != nil && ctx.Err() == nil {
		c.out.Fail(ctx, slog.LevelWarn, "breaker probe claims", "claim circuit breaker probe", err, "tasks", tasks)
	}
	jobs = c.qlim.probed(ctx, jobs) // queue.go
	return jobs, err
}
