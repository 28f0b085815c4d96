package queuemax

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Multi-process tests of the global limits: the test binary re-executed
// (see process_test.go) as three worker processes on one data directory
// or PostgreSQL schema. Each handler prints when it starts and ends; the
// parent checks the limits from those lines, outside the queue.

// Child settings of mode "glimits".
const (
	glRateEnv  = "QUEUEMAX_TEST_GL_RATE"  // global rate per second; 0: none
	glConcEnv  = "QUEUEMAX_TEST_GL_CONC"  // global concurrency; 0: none
	glSleepEnv = "QUEUEMAX_TEST_GL_SLEEP" // how long each job works
	// glKeyConcEnv is a per-customer concurrency (KeyConcurrency with
	// LimitBy "customer", beside the task-wide limits); 0: none. The
	// jobs are then custArgs{Customer: N % 5, N}.
	glKeyConcEnv = "QUEUEMAX_TEST_GL_KEY_CONC"
	// glStuckEnv is the children's StuckTimeout, the life of a limit's
	// slot without a renewal (renewed every 200ms); empty: glStuck.
	glStuckEnv = "QUEUEMAX_TEST_GL_STUCK"
)

// glStuck is the children's StuckTimeout unless a test sets glStuckEnv.
// A live process's slots expire when their renewals, store writes, are
// late by more than it less a renewal period: under the race detector on
// a loaded machine a second was too short (a process lost its slots while
// its jobs ran, and another rightly took them), so only the kill -9 test,
// which measures how soon a killed process's slots come back, runs with
// one second.
const glStuck = 5 * time.Second

// limitsChildMain runs mode "glimits": 10 workers on t.Limited until
// SIGTERM, printing "s NANOS N" at each start and "e NANOS N" at each end
// (N the job's number), and "g FROM TO" (nanoseconds) when the process
// stalled for glStall or more (see heldSpans).
func limitsChildMain(ctx context.Context, mode, dir string, shards int, say func(string, ...any)) (code int, ok bool) {
	if mode != "glimits" {
		return 0, false
	}
	var mu sync.Mutex
	unsafeSay := say
	say = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		unsafeSay(format, args...)
	}
	rate, _ := strconv.Atoi(os.Getenv(glRateEnv))
	conc, _ := strconv.Atoi(os.Getenv(glConcEnv))
	work, _ := time.ParseDuration(os.Getenv(glSleepEnv))
	opts := TaskOptions{GlobalConcurrency: conc}
	if rate > 0 {
		opts.GlobalRateLimit = Rate{Limit: rate, Per: time.Second}
	}
	do := func(n int) error {
		say("s %d %d", time.Now().UnixNano(), n)
		if work > 0 {
			time.Sleep(work) // the job's work
		}
		say("e %d %d", time.Now().UnixNano(), n)
		return nil
	}
	h := Define("t.Limited", opts, func(ctx context.Context, a echoArgs) error { return do(a.N) })
	if kc, _ := strconv.Atoi(os.Getenv(glKeyConcEnv)); kc > 0 {
		opts.KeyConcurrency, opts.LimitBy = kc, "customer"
		h = Define("t.Limited", opts, func(ctx context.Context, a custArgs) error { return do(a.N) })
	}
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if now.Sub(last) >= glStall {
					say("g %d %d", last.UnixNano(), now.UnixNano())
				}
				last = now
			}
		}
	}()
	stuck, err := time.ParseDuration(os.Getenv(glStuckEnv))
	if err != nil {
		stuck = glStuck
	}
	c, err := Open(ctx, childConfig(dir, shards, Config{Handlers: []Handler{h}, Workers: 10, Logger: slog.New(slog.DiscardHandler),
		HeartbeatInterval: 200 * time.Millisecond, StuckTimeout: stuck, RecoveryInterval: 200 * time.Millisecond}))
	if err != nil {
		say("error %v", err)
		return 1, true
	}
	defer c.Close()
	say("ready")
	if err := c.Run(ctx); err != nil {
		say("error %v", err)
		return 1, true
	}
	return 0, true
}

// glStall is the shortest stall of a "glimits" child that it reports. Its
// leases and slots are renewed every 200ms and expire after its
// StuckTimeout (a second in the kill -9 test) without renewal; a stall of
// the whole process (the race detector on a loaded machine) can let them
// expire while its jobs run, and another process then rightly takes them.
const glStall = 300 * time.Millisecond

// glEvent is a start or an end printed by a "glimits" child.
type glEvent struct {
	kid   int
	start bool
	at    time.Time
	n     int
}

// glRun is a running set of "glimits" children and what they printed.
type glRun struct {
	mu     sync.Mutex
	evs    []glEvent
	stalls []glGap // the children's stalls
	kids   []*child
	seen   chan struct{} // signalled at each event
}

// glGap is a stall of child kid from from to to.
type glGap struct {
	kid      int
	from, to time.Time
}

// startLimitKids starts three "glimits" children on the queue that cfg
// opens (Dir, or a PostgreSQL target), then enqueues n jobs of t.Limited.
func startLimitKids(t *testing.T, cfg Config, n int, env ...string) (*glRun, *testBundle) {
	t.Helper()
	b := setup(t, cfg)
	keyed := slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, glKeyConcEnv+"=") })
	params := make([]EnqueueParams, n)
	for i := range params {
		params[i] = EnqueueParams{Task: "t.Limited", Payload: echoArgs{i}}
		if keyed {
			params[i].Payload = custArgs{Customer: i % 5, N: i}
		}
	}
	r := &glRun{seen: make(chan struct{}, 1)}
	if pt := pgTargetOf(cfg); pt != nil {
		env = append(env, pgEnv(pt.dsn, pt.schema)...)
	}
	dir := cfg.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	for i := range 3 {
		k := startChild(t, "glimits", dir, max(cfg.Shards, 1), env...)
		k.expect(t, "ready")
		r.kids = append(r.kids, k)
		go func() {
			for l := range k.lines {
				f := strings.Fields(l)
				var v [2]int64
				for j := 1; j < len(f) && j <= len(v); j++ {
					v[j-1], _ = strconv.ParseInt(f[j], 10, 64)
				}
				r.mu.Lock()
				switch {
				case len(f) == 3 && (f[0] == "s" || f[0] == "e"):
					r.evs = append(r.evs, glEvent{kid: i, start: f[0] == "s", at: time.Unix(0, v[0]), n: int(v[1])})
				case len(f) == 3 && f[0] == "g":
					r.stalls = append(r.stalls, glGap{i, time.Unix(0, v[0]), time.Unix(0, v[1])})
				case strings.HasPrefix(l, "error"):
					t.Errorf("child %d: %s", i, l)
				}
				r.mu.Unlock()
				select {
				case r.seen <- struct{}{}:
				default:
				}
			}
		}()
	}
	// The jobs go in once every process is ready (and polling), not while
	// the later ones still start.
	if _, err := b.c.EnqueueMany(b.ctx, params); err != nil {
		t.Fatal(err)
	}
	return r, b
}

// wait waits until cond holds over the events so far.
func (r *glRun) wait(t *testing.T, what string, d time.Duration, cond func([]glEvent) bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		ok := cond(r.evs)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// stop ends the children with SIGTERM and waits for them.
func (r *glRun) stop() {
	for _, k := range r.kids {
		k.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, k := range r.kids {
		k.cmd.Wait()
	}
}

// glSpan is one run of a job in a child (kid): the job's number, its span,
// and whether its process stalled around it (see heldSpans).
type glSpan struct {
	kid, n  int
	s       span
	stalled bool
}

// runsOf pairs each start with its end; an execution without an end (its
// process was killed) ends at cut.
func runsOf(evs []glEvent, cut time.Time) []glSpan {
	type key struct{ kid, n int }
	open := map[key]glEvent{}
	var out []glSpan
	for _, e := range evs {
		k := key{e.kid, e.n}
		if e.start {
			open[k] = e
		} else if s, ok := open[k]; ok {
			out = append(out, glSpan{kid: e.kid, n: e.n, s: span{Start: s.at, End: e.at}})
			delete(open, k)
		}
	}
	for k, s := range open {
		end := cut
		if end.Before(s.at) {
			end = s.at
		}
		out = append(out, glSpan{kid: k.kid, n: k.n, s: span{Start: s.at, End: end}})
	}
	return out
}

// spansOf returns the spans of runsOf(evs, cut), of child kid only when kid
// is not negative.
func spansOf(evs []glEvent, cut time.Time, kid int) []span {
	var out []span
	for _, r := range runsOf(evs, cut) {
		if kid < 0 || r.kid == kid {
			out = append(out, r.s)
		}
	}
	return out
}

// heldSpans returns the runs of evs, each marked stalled when it may not
// have held its slot throughout, and the spans of those that did. A
// limit's slot is a lease, renewed with the job's heartbeat: a run is left
// out when its process stalled (glStall or more) during it or up to
// glStall before it started (a job claimed before the stall), since then
// its lease and slot could expire and another process rightly took them.
// On an idle machine no process stalls and every run counts.
func (r *glRun) heldSpans(evs []glEvent, cut time.Time) ([]span, []glSpan) {
	runs := runsOf(evs, cut)
	for i := range runs {
		runs[i].stalled = r.stalled(runs[i].kid, runs[i].s.Start, runs[i].s.End)
	}
	return heldOf(runs), runs
}

// heldOf returns the spans of the runs that are not marked stalled.
func heldOf(runs []glSpan) []span {
	var held []span
	for _, x := range runs {
		if !x.stalled {
			held = append(held, x.s)
		}
	}
	return held
}

// stalled reports whether child kid stalled (glStall or more) between
// from and to, or up to glStall before from.
func (r *glRun) stalled(kid int, from, to time.Time) bool {
	for _, g := range r.stalls {
		if g.kid == kid && from.Before(g.to.Add(glStall)) && !to.Before(g.from) {
			return true
		}
	}
	return false
}

// crowd describes the runs (process, job, start, length) that overlap at
// the busiest instant of the held runs, for a failure's message, and how
// many runs were left out for a stall.
func crowd(runs []glSpan) string {
	var best []glSpan
	left := 0
	for _, x := range runs {
		if x.stalled {
			left++
			continue
		}
		var at []glSpan
		for _, o := range runs {
			if !o.stalled && !o.s.Start.After(x.s.Start) && o.s.End.After(x.s.Start) {
				at = append(at, o)
			}
		}
		if len(at) > len(best) {
			best = at
		}
	}
	var b strings.Builder
	for _, x := range best {
		fmt.Fprintf(&b, "\n\tprocess %d job %d started %s ran %v", x.kid, x.n, x.s.Start.Format("15:04:05.000"), x.s.End.Sub(x.s.Start).Round(time.Millisecond))
	}
	if left > 0 {
		fmt.Fprintf(&b, "\n\t%d runs not counted: their process stalled", left)
	}
	return b.String()
}

func endedAll(n int) func([]glEvent) bool {
	return func(evs []glEvent) bool {
		done := map[int]bool{}
		for _, e := range evs {
			if !e.start {
				done[e.n] = true
			}
		}
		return len(done) == n
	}
}

// testProcessConcurrency: global concurrency 2 over 3 processes of 10
// workers: never 3 running, every job done.
func testProcessConcurrency(t *testing.T, cfg Config) {
	const n = 60
	r, _ := startLimitKids(t, cfg, n, glConcEnv+"=2", glSleepEnv+"=15ms")
	r.wait(t, "every job to end", 90*time.Second, endedAll(n))
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	held, runs := r.heldSpans(r.evs, time.Now())
	if m := maxOverlap(held); m != 2 {
		t.Errorf("at most %d jobs ran at once; want exactly the global concurrency 2 (never 3):%s", m, crowd(runs))
	}
	kids := map[int]bool{}
	for _, e := range r.evs {
		kids[e.kid] = true
	}
	t.Logf("%d events from %d processes", len(r.evs), len(kids))
}

// testProcessConcurrencyKill: a process killed with kill -9 while it holds
// a slot gives it back within the stuck timeout (1s): the others run 2 at
// once again within it (plus a renewal and a claim poll), never 3, and
// every job ends.
func testProcessConcurrencyKill(t *testing.T, cfg Config) {
	const n = 30
	r, _ := startLimitKids(t, cfg, n, glConcEnv+"=2", glSleepEnv+"=100ms", glStuckEnv+"=1s")
	// The victim is the first process that starts a job: it holds a slot.
	vi := -1
	r.wait(t, "a job to start", 60*time.Second, func(evs []glEvent) bool {
		for _, e := range evs {
			if e.start {
				vi = e.kid
				return true
			}
		}
		return false
	})
	victim := r.kids[vi]
	victim.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	victim.cmd.Wait()
	r.wait(t, "every job to end", 90*time.Second, endedAll(n))
	r.kids = slices.Delete(r.kids, vi, vi+1)
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	held, runs := r.heldSpans(r.evs, killed)
	if m := maxOverlap(held); m > 2 {
		t.Errorf("%d jobs ran at once; want at most 2:%s", m, crowd(runs))
	}
	// The first moment after the kill when the survivors ran 2 at once.
	var surv []glEvent
	for _, e := range r.evs {
		if e.kid != vi {
			surv = append(surv, e)
		}
	}
	back := time.Time{}
	for _, s := range spansOf(surv, time.Now(), -1) {
		for _, o := range spansOf(surv, time.Now(), -1) {
			if s != o && s.Start.After(killed) && !o.Start.After(s.Start) && o.End.After(s.Start) && (back.IsZero() || s.Start.Before(back)) {
				back = s.Start
			}
		}
	}
	// How soon the slot comes back is a timing bound: the race detector
	// on a loaded machine slows the survivors' claims and renewals past
	// it, so under -race only the safety checks above hold and `make
	// test` runs these tests again without it (see the Makefile).
	if raceEnabled {
		t.Logf("both slots in use again %v after the kill (not checked under the race detector)", back.Sub(killed).Round(time.Millisecond))
		return
	}
	if back.IsZero() || back.Sub(killed) > 2*time.Second {
		t.Errorf("after the kill the survivors ran 2 at once only %v later; want within the stuck timeout (1s) and a renewal", back.Sub(killed))
	}
	t.Logf("both slots in use again %v after the kill", back.Sub(killed).Round(time.Millisecond))
}

// testProcessRate: a global rate of 50/s over 3 processes: 30 s of
// starts within ±5% of 1,500, and no window of one second above the
// bucket's 50.
func testProcessRate(t *testing.T, cfg Config) {
	const n = 1800
	r, _ := startLimitKids(t, cfg, n, glRateEnv+"=50")
	var t0 time.Time
	r.wait(t, "the first start", 60*time.Second, func(evs []glEvent) bool {
		for _, e := range evs {
			if e.start {
				t0 = e.at
				return true
			}
		}
		return false
	})
	end := t0.Add(30 * time.Second)
	r.wait(t, "30 s of starts", 90*time.Second, func(evs []glEvent) bool {
		return len(evs) > 0 && evs[len(evs)-1].at.After(end.Add(time.Second)) || len(evs) >= 2*n
	})
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	var starts, held []time.Time
	kids := map[int]int{}
	for _, e := range r.evs {
		if e.start && e.at.Before(end) {
			starts = append(starts, e.at)
			kids[e.kid]++
			if !r.stalled(e.kid, e.at, e.at) {
				held = append(held, e.at)
			}
		}
	}
	// Each token comes back one period after its job's handler started
	// and is taken again at the next claim: a claim's latency is lost once
	// per token cycle. Under the race detector on a loaded machine a claim
	// round takes far longer, so there only the upper bound is checked,
	// and `make test` runs these tests again without it (see the
	// Makefile), where the count must be within 5%.
	if len(starts) > 1575 || !raceEnabled && len(starts) < 1425 {
		t.Errorf("%d starts in 30 s; want 1,500 ± 5%%", len(starts))
	}
	// A job claimed before its process stalled starts when the stall
	// ends, with a token taken before it: such starts are not checked
	// against the rate (see heldSpans).
	checkRate(t, held, 50, time.Second, 10)
	t.Logf("%d starts in 30 s (%d right after a stall of their process), per process %v", len(starts), len(starts)-len(held), kids)
}

// testProcessWideAndKey: "at most 3 at once, 1 per customer" over 3
// processes of 10 workers, 5 customers: never 4 running in all, never 2
// of one customer, every job done.
func testProcessWideAndKey(t *testing.T, cfg Config) {
	const n = 60
	r, _ := startLimitKids(t, cfg, n, glConcEnv+"=3", glKeyConcEnv+"=1", glSleepEnv+"=15ms")
	r.wait(t, "every job to end", 90*time.Second, endedAll(n))
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	held, runs := r.heldSpans(r.evs, time.Now())
	if m := maxOverlap(held); m > 3 || m < 2 {
		t.Errorf("at most %d jobs ran at once; want the task-wide 3 (never 4), and more than one:%s", m, crowd(runs))
	}
	for c := range 5 {
		var custRuns []glSpan
		for _, x := range runs {
			if x.n%5 == c {
				custRuns = append(custRuns, x)
			}
		}
		if m := maxOverlap(heldOf(custRuns)); m > 1 {
			t.Errorf("customer %d: %d jobs ran at once; want at most 1:%s", c, m, crowd(custRuns))
		}
	}
}

func TestProcesses_WideAndKeyConcurrency(t *testing.T) {
	t.Parallel()
	testProcessWideAndKey(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgresProcesses_WideAndKeyConcurrency(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testProcessWideAndKey(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

func TestProcesses_GlobalConcurrency(t *testing.T) {
	t.Parallel()
	testProcessConcurrency(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestProcesses_GlobalConcurrencyKill9(t *testing.T) {
	t.Parallel()
	testProcessConcurrencyKill(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestProcesses_GlobalRate(t *testing.T) {
	t.Parallel()
	testProcessRate(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgresProcesses_GlobalConcurrency(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testProcessConcurrency(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

func TestPostgresProcesses_GlobalConcurrencyKill9(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testProcessConcurrencyKill(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

func TestPostgresProcesses_GlobalRate(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testProcessRate(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}
