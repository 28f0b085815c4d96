package admission

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Rate tokens count from the handler's start. A claim takes its tokens at
// the claim (store.LimitGrant.At); a job of a global or queue rate
// remembers which take its token came from, and when its handler starts
// the token is moved to that instant (store.LimitGive.Used), batched: the
// jobs that start together are moved in one call. A token thus stays out
// for a whole period after the handler started, however long the job
// waited for a worker (a busy machine), so no window of the period sees
// more starts than the rate where the handlers run. A job dropped before
// it started keeps its token at the claim, the earlier and safe side.

// rateStamp names the take a job's rate token came from.
type rateStamp struct {
	scope, key string
	at         int64 // the take's LimitGrant.At, unix ms
}

// stamps moves the rate tokens of starting jobs to their start.
type stamps struct {
	e  *Controller
	st store.Limiter

	n     atomic.Int64 // jobs in of: the hot path skips the lock at zero
	mu    sync.Mutex
	of    map[store.JobID][]rateStamp // claimed, not started
	due   map[rateStamp]int           // started, not moved yet
	last  time.Time                   // the latest start in due
	flush flusher
}

func newStamps(e *Controller) *stamps {
	st := e.cfg.Store
	s := &stamps{e: e, st: st, of: make(map[store.JobID][]rateStamp), due: make(map[rateStamp]int)}
	s.flush = flusher{mu: &s.mu, jobs: e.jobWG, take: s.takeGives, give: s.give}
	return s
}

// add records that job id's start spent a token of the take at at.
func (s *stamps) add(id store.JobID, scope, key string, at time.Time) {
	if s == nil || at.IsZero() {
		return
	}
	s.mu.Lock()
	if _, ok := s.of[id]; !ok {
		s.n.Add(1)
	}
	s.of[id] = append(s.of[id], rateStamp{scope: scope, key: key, at: at.UnixMilli()})
	s.mu.Unlock()
}

// begun moves job id's tokens to now, its handler's start.
func (s *stamps) begun(id store.JobID) {
	if s == nil || s.n.Load() == 0 {
		return
	}
	now := s.e.cfg.Now()
	s.mu.Lock()
	rs, ok := s.of[id]
	if !ok {
		s.mu.Unlock()
		return
	}
	delete(s.of, id)
	s.n.Add(-1)
	for _, r := range rs {
		s.due[r]++
	}
	if now.After(s.last) {
		s.last = now
	}
	s.flush.kick()
}

// drop forgets job id, dropped before its handler started.
func (s *stamps) drop(id store.JobID) {
	if s == nil || s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	if _, ok := s.of[id]; ok {
		delete(s.of, id)
		s.n.Add(-1)
	}
	s.mu.Unlock()
}

// takeGives empties due into the store's gives (flusher.take), each
// batch moved to its latest start (a token moved a little later than its
// start stays out a little longer: the safe side).
func (s *stamps) takeGives() []store.LimitGive {
	if len(s.due) == 0 {
		return nil
	}
	gives := make([]store.LimitGive, 0, len(s.due))
	for r, n := range s.due {
		gives = append(gives, store.LimitGive{Scope: r.scope, Key: r.key, At: time.UnixMilli(r.at), Used: n, StartedAt: s.last})
	}
	clear(s.due)
	return gives
}

// give moves the tokens of takeGives (flusher.give).
func (s *stamps) give(gives []store.LimitGive) {
	if err := s.st.LimitGive(context.WithoutCancel(s.e.jobCtx()), s.e.cfg.WorkerID, gives, s.e.cfg.Now()); err != nil {
		// The tokens stay at their claims, a little earlier.
		s.e.out.Fail(context.Background(), slog.LevelWarn, "rate token moves", "global limits: move rate tokens to their starts", err)
	}
}
