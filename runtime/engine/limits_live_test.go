package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/limitcheck"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/admission"
	"github.com/queuemax/queuemax/runtime/store"
)

// The tests of global (task-wide, per-key) and queue limits on live
// engines: two engines on one data directory are two processes sharing
// the queue, their limits held in the store.

// span, maxOverlap, maxInWindow and checkRate are internal/limitcheck's,
// shared with the root package's limit tests.
type span = limitcheck.Span

var (
	maxOverlap  = limitcheck.MaxOverlap
	maxInWindow = limitcheck.MaxInWindow
)

func checkRate(t *testing.T, starts []time.Time, n int, per time.Duration, claim int) {
	t.Helper()
	limitcheck.Rate(t, starts, n, per, claim, raceEnabled)
}

// waitFor polls cond until it holds, failing t after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// limit sets the engine's global limits to rules', as the client does
// from its handlers' options.
func (l *live) limit(rules admission.Rules) {
	l.cfg.GlobalLimits, l.cfg.LimitBy, l.cfg.WideLimits = rules.Engine(), rules.By(), rules.Wide()
}

// insertQ stores one job of task in queue for each payload (spread over
// the shards, one attempt each), wakes the engine and returns their IDs in
// order.
func (l *live) insertQ(task, queue string, payloads ...any) []store.JobID {
	l.t.Helper()
	ps := make([]store.InsertParams, len(payloads))
	for i, p := range payloads {
		b, err := json.Marshal(p)
		if err != nil {
			l.t.Fatal(err)
		}
		ps[i] = store.InsertParams{Shard: i % l.cfg.Shards, Task: task, Queue: queue, Payload: b, MaxAttempts: 1, Now: time.Now().UTC()}
	}
	ids, err := l.st.Insert(l.t.Context(), ps)
	if err != nil {
		l.t.Fatal(err)
	}
	select {
	case l.cfg.Wake <- struct{}{}:
	default:
	}
	return ids
}

// infos lists the limits of rules with their use in l's store, as
// Client.Stats' GlobalLimits does.
func (l *live) infos(rules admission.Rules) []admission.LimitInfo {
	l.t.Helper()
	is, err := admission.ReadInfos(l.t.Context(), l.st, time.Now().UTC(), rules)
	if err != nil {
		l.t.Fatal(err)
	}
	return is
}

// jobs lists the stored jobs of status with Held filled in by rules, as
// Client.Jobs does.
func (l *live) jobs(status store.Status, rules admission.Rules) []*store.Job {
	l.t.Helper()
	js, err := l.st.Jobs(l.t.Context(), store.ListParams{Shard: store.AllShards, Status: status, Limit: 1000})
	if err != nil {
		l.t.Fatal(err)
	}
	admission.LimitHeld(l.t.Context(), l.st, time.Now().UTC(), js, rules)
	return js
}

// completions waits for n completion events of the engines a and b
// together, failing t after 60 s.
func completions(t *testing.T, n int, a, b *live) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for done := 0; done < n; {
		var e *Event
		select {
		case e = <-a.events:
		case e = <-b.events:
		case <-timeout:
			t.Fatalf("%d of %d jobs completed", done, n)
		}
		if e.Kind == queuemaxtype.EventCompleted {
			done++
		}
	}
}

// raise sets m to n if n is higher.
func raise(m *atomic.Int64, n int64) {
	for c := m.Load(); n > c && !m.CompareAndSwap(c, n); c = m.Load() {
	}
}

type nArgs struct {
	N int `json:"n"`
}

func argsOf(t *testing.T, j *store.Job, v any) {
	if err := json.Unmarshal(j.Payload, v); err != nil {
		t.Error(err)
	}
}

// pair returns two live engines on one directory of shards shards with
// the same handlers and rules: two processes sharing the queue.
func pair(t *testing.T, shards int, hs map[string]*Handler, rules admission.Rules) (*live, *live) {
	dir := t.TempDir()
	a := newLiveIn(t, dir, shards, hs)
	b := newLiveIn(t, dir, shards, hs)
	b.cfg.WorkerID = "second"
	a.limit(rules)
	b.limit(rules)
	return a, b
}

// TestGlobalLimits_TwoEngines: two engines on one directory, 6 workers
// each, never run more than the global concurrency of 2 together; every
// job completes; the limit's use shows it.
func TestGlobalLimits_TwoEngines(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var spans []span
	var running, most atomic.Int64
	holding := make(chan struct{})
	release := make(chan struct{})
	h := handle(func(ctx context.Context, j *store.Job) (any, error) {
		var a nArgs
		argsOf(t, j, &a)
		s := span{Start: time.Now()}
		raise(&most, running.Add(1))
		if a.N == 0 {
			close(holding)
			<-release // the first job holds its slot until the use was read
		} else {
			time.Sleep(2 * time.Millisecond) // the job's work
		}
		running.Add(-1)
		s.End = time.Now()
		mu.Lock()
		spans = append(spans, s)
		mu.Unlock()
		return nil, nil
	})
	rules := admission.Rules{"t.Limited": {Global: store.LimitRule{Concurrency: 2}}}
	a, b := pair(t, 2, map[string]*Handler{"t.Limited": h}, rules)
	a.cfg.Workers, a.cfg.ClaimBatch = 6, 24
	b.cfg.Workers, b.cfg.ClaimBatch = 6, 24
	const n = 40
	payloads := make([]any, n)
	for i := range payloads {
		payloads[i] = nArgs{i}
	}
	a.insertQ("t.Limited", "", payloads...)
	a.start()
	b.start()
	<-holding
	is := a.infos(rules)
	if len(is) != 1 || is[0].Name != "t.Limited" || is[0].Concurrency != 2 || is[0].Running < 1 {
		t.Errorf("limits = %+v; want t.Limited with concurrency 2 and at least 1 running", is)
	}
	close(release)
	completions(t, n, a, b)
	mu.Lock()
	if m := maxOverlap(spans); m > 2 || most.Load() > 2 {
		t.Errorf("%d jobs ran at once (counter %d); want at most the global concurrency 2", m, most.Load())
	}
	mu.Unlock()
	// The slots go back once the acknowledgements committed.
	waitFor(t, "every slot back", func() bool {
		is := a.infos(rules)
		return len(is) == 1 && is[0].Running == 0
	})
}

// TestGlobalLimits_Rate: 30 jobs under a global rate of 20/s over two
// engines: 20 start at once (a full bucket), the rest a second later; no
// second holds more than 20 starts. (A timing bound: TIMING_TESTS in the
// Makefile runs it again without the race detector.)
func TestGlobalLimits_Rate(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var starts []time.Time
	h := handle(func(context.Context, *store.Job) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil, nil
	})
	rules := admission.Rules{"t.Rated": {Global: store.LimitRule{Rate: 20, Per: time.Second}}}
	a, b := pair(t, 2, map[string]*Handler{"t.Rated": h}, rules)
	a.cfg.Workers, a.cfg.ClaimBatch = 4, 16
	b.cfg.Workers, b.cfg.ClaimBatch = 4, 16
	const n = 30
	payloads := make([]any, n)
	for i := range payloads {
		payloads[i] = nArgs{i}
	}
	a.insertQ("t.Rated", "", payloads...)
	a.start()
	b.start()
	completions(t, n, a, b)
	mu.Lock()
	defer mu.Unlock()
	checkRate(t, starts, 20, time.Second, 4)
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if d := starts[n-1].Sub(starts[0]); d < time.Second {
		t.Errorf("30 starts took %v; want at least a second", d)
	}
}

// TestGlobalLimits_Held: a ready job waiting for its task's global limit
// says so (Held), and is neither failed nor retried. (The engine holding
// the only slot claims up to three jobs ahead for it, which wait in the
// process, processing, for the slot.)
func TestGlobalLimits_Held(t *testing.T) {
	t.Parallel()
	var holding, started atomic.Int64
	release := make(chan struct{})
	h := handle(func(context.Context, *store.Job) (any, error) {
		holding.Add(1)
		started.Add(1)
		defer holding.Add(-1)
		<-release
		return nil, nil
	})
	rules := admission.Rules{"t.Held": {Global: store.LimitRule{Concurrency: 1}}}
	l := newLive(t, map[string]*Handler{"t.Held": h})
	l.limit(rules)
	l.cfg.Workers, l.cfg.ClaimBatch = 4, 16
	ids := l.insertQ("t.Held", "", nArgs{0}, nArgs{1}, nArgs{2}, nArgs{3}, nArgs{4}, nArgs{5})
	l.start()
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	waitFor(t, "a job to hold the slot", func() bool { return holding.Load() == 1 })
	waitFor(t, "the jobs claimed ahead", func() bool { return len(l.jobs(store.StatusProcessing, rules)) == 4 })
	const want = "global concurrency of task t.Held reached (1/1 running)"
	pending := l.jobs(store.StatusPending, rules)
	if len(pending) != 2 {
		t.Fatalf("pending jobs = %d; want 2", len(pending))
	}
	for _, p := range pending {
		if p.Held != want || p.Attempts != 0 {
			t.Errorf("job %d: Held %q, %d attempts; want %q, never attempted", p.ID, p.Held, p.Attempts, want)
		}
	}
	if !slices.ContainsFunc(pending, func(j *store.Job) bool { return j.ID == ids[5] }) {
		t.Errorf("the last job enqueued is not pending: %+v", pending)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d handlers started; want 1 (the global concurrency)", n)
	}
	close(release)
	closed = true
	l.wait(6, queuemaxtype.EventCompleted)
	if s := l.stats(); s.TotalProcessed != 6 {
		t.Errorf("processed %d; want 6", s.TotalProcessed)
	}
	if ws := l.e.Stats(); ws.Retried != 0 || ws.Failed != 0 {
		t.Errorf("engine stats = %+v; want nothing retried or failed", ws)
	}
}

// TestQueueLimits_WithTaskLimit: a task with a global limit in a queue with
// a tighter one (their starts taken in one store call) runs under both; a
// task without limits in another queue is not held. Also with the task's
// limit per key (limit_by, claimed by its own path).
func TestQueueLimits_WithTaskLimit(t *testing.T) {
	t.Parallel()
	t.Run("Task", func(t *testing.T) {
		t.Parallel()
		testQueueAndTaskLimit(t, admission.TaskRule{Global: store.LimitRule{Concurrency: 3}})
	})
	t.Run("PerKey", func(t *testing.T) {
		t.Parallel()
		testQueueAndTaskLimit(t, admission.TaskRule{Global: store.LimitRule{Concurrency: 3}, By: "n"})
	})
}

func testQueueAndTaskLimit(t *testing.T, rule admission.TaskRule) {
	var running, most, free atomic.Int64
	both := handle(func(context.Context, *store.Job) (any, error) {
		raise(&most, running.Add(1))
		time.Sleep(time.Millisecond) // the job's work
		running.Add(-1)
		return nil, nil
	})
	other := handle(func(context.Context, *store.Job) (any, error) { free.Add(1); return nil, nil })
	l := newLiveIn(t, t.TempDir(), 2, map[string]*Handler{"t.Both": both, "t.Other": other})
	rules := admission.Rules{"t.Both": rule}
	l.limit(rules)
	l.cfg.Workers, l.cfg.ClaimBatch = 4, 16
	if err := l.st.SetQueueLimits(t.Context(), "tight", store.LimitRule{Concurrency: 1}, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	const n = 12
	for i := range n {
		l.insertQ("t.Both", "tight", nArgs{i})
		l.insertQ("t.Other", "", nArgs{i})
	}
	l.start()
	l.wait(2*n, queuemaxtype.EventCompleted)
	if m := most.Load(); m != 1 {
		t.Errorf("%d jobs of queue tight ran at once; want 1 (its limit, below the task's 3)", m)
	}
	if f := free.Load(); f != n {
		t.Errorf("%d jobs of the default queue ran; want %d", f, n)
	}
	waitFor(t, "every slot back", func() bool {
		is := l.infos(rules)
		for _, g := range is {
			if g.Running != 0 {
				return false
			}
		}
		return len(is) >= 2
	})
}

// TestQueueLimits_SlotRenewed: the slot of a running job of a limited
// queue is renewed by its process: its expiry in the store moves past the
// one its claim set (a process killed with kill -9 stops renewing, and the
// slot expires StuckTimeout after the last renewal).
func TestQueueLimits_SlotRenewed(t *testing.T) {
	t.Parallel()
	var started atomic.Int64
	release := make(chan struct{})
	h := handle(func(context.Context, *store.Job) (any, error) {
		started.Add(1)
		<-release
		return nil, nil
	})
	const stuck = 10 * time.Second
	l := newLive(t, map[string]*Handler{"t.Long": h})
	l.cfg.Workers, l.cfg.ClaimBatch = 2, 8
	l.cfg.HeartbeatInterval, l.cfg.StuckTimeout = 50*time.Millisecond, stuck
	if err := l.st.SetQueueLimits(t.Context(), "long", store.LimitRule{Concurrency: 1}, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	l.insertQ("t.Long", "long", nArgs{0}, nArgs{1})
	l.start()
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
	}()
	waitFor(t, "the first job to start", func() bool { return started.Load() == 1 })
	claimedBy := time.Now().UTC().Add(stuck) // the claim's expiry is at most this
	waitFor(t, "the slot renewed past its first expiry", func() bool {
		us, err := l.st.LimitUsage(t.Context(), claimedBy.Add(10*time.Millisecond))
		return err == nil && len(us) == 1 && us[0].Scope == "queue:long" && us[0].Running == 1
	})
	if n := started.Load(); n != 1 {
		t.Errorf("%d jobs started under a queue concurrency of 1; want 1", n)
	}
	close(release)
	closed = true
	l.wait(2, queuemaxtype.EventCompleted)
}
