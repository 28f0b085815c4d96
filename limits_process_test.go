package queuemax

import (
	"context"
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
)

// limitsChildMain runs mode "glimits": 10 workers on t.Limited until
// SIGTERM, printing "s NANOS N" at each start and "e NANOS N" at each end.
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
	c, err := Open(ctx, childConfig(dir, shards, Config{Handlers: []Handler{h}, Workers: 10, Logger: slog.New(slog.DiscardHandler),
		HeartbeatInterval: 200 * time.Millisecond, StuckTimeout: time.Second, RecoveryInterval: 200 * time.Millisecond}))
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

// glEvent is one line of a "glimits" child.
type glEvent struct {
	kid   int
	start bool
	at    time.Time
	n     int
}

// glRun is a running set of "glimits" children and what they printed.
type glRun struct {
	mu   sync.Mutex
	evs  []glEvent
	kids []*child
	seen chan struct{} // signalled at each event
}

// startLimitKids starts three "glimits" children on the queue that cfg
// opens (Dir, or a PostgreSQL target) and enqueues n jobs of t.Limited.
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
	if _, err := b.c.EnqueueMany(b.ctx, params); err != nil {
		t.Fatal(err)
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
				if len(f) != 3 || (f[0] != "s" && f[0] != "e") {
					if strings.HasPrefix(l, "error") {
						t.Errorf("child %d: %s", i, l)
					}
					continue
				}
				ns, _ := strconv.ParseInt(f[1], 10, 64)
				jn, _ := strconv.Atoi(f[2])
				r.mu.Lock()
				r.evs = append(r.evs, glEvent{kid: i, start: f[0] == "s", at: time.Unix(0, ns), n: jn})
				r.mu.Unlock()
				select {
				case r.seen <- struct{}{}:
				default:
				}
			}
		}()
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

// spans pairs each start with its end; an execution without an end (its
// process was killed) ends at cut.
func spansOf(evs []glEvent, cut time.Time, kid int) []span {
	open := map[[2]int]time.Time{}
	var out []span
	for _, e := range evs {
		if kid >= 0 && e.kid != kid {
			continue
		}
		k := [2]int{e.kid, e.n}
		if e.start {
			open[k] = e.at
		} else if s, ok := open[k]; ok {
			out = append(out, span{Start: s, End: e.at})
			delete(open, k)
		}
	}
	for _, s := range open {
		if cut.Before(s) {
			cut = s
		}
		out = append(out, span{Start: s, End: cut})
	}
	return out
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
	if m := maxOverlap(spansOf(r.evs, time.Now(), -1)); m != 2 {
		t.Errorf("at most %d jobs ran at once; want exactly the global concurrency 2 (never 3)", m)
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
	r, _ := startLimitKids(t, cfg, n, glConcEnv+"=2", glSleepEnv+"=100ms")
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
	if m := maxOverlap(spansOf(r.evs, killed, -1)); m > 2 {
		t.Errorf("%d jobs ran at once; want at most 2", m)
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
	var starts []time.Time
	kids := map[int]int{}
	for _, e := range r.evs {
		if e.start && e.at.Before(end) {
			starts = append(starts, e.at)
			kids[e.kid]++
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
	checkRate(t, starts, 50, time.Second, 10)
	t.Logf("%d starts in 30 s, per process %v", len(starts), kids)
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
	all := spansOf(r.evs, time.Now(), -1)
	if m := maxOverlap(all); m > 3 || m < 2 {
		t.Errorf("at most %d jobs ran at once; want the task-wide 3 (never 4), and more than one", m)
	}
	for c := range 5 {
		var evs []glEvent
		for _, e := range r.evs {
			if e.n%5 == c {
				evs = append(evs, e)
			}
		}
		if m := maxOverlap(spansOf(evs, time.Now(), -1)); m > 1 {
			t.Errorf("customer %d: %d jobs ran at once; want at most 1", c, m)
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
