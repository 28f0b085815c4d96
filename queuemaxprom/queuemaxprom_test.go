package queuemaxprom

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type testBundle struct {
	c   *queuemax.Client
	col *Collector
	reg *prometheus.Registry
	ctx context.Context
}

// setup opens a client with col as its middleware, attaches col and
// registers it.
func setup(t *testing.T, o Options, cfg queuemax.Config) *testBundle {
	t.Helper()
	col := NewCollector(o)
	cfg.Dir = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.Middleware = append(cfg.Middleware, col)
	cfg.AllowUnknownTasks = true // tests store tasks that no worker published
	c, err := queuemax.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	t.Cleanup(col.Attach(c))
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(col); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return &testBundle{c: c, col: col, reg: reg, ctx: t.Context()}
}

// gather returns the samples of family name, keyed by their label values
// joined with "|" in label-name order.
func gather(t *testing.T, reg *prometheus.Registry, name string) map[string]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var vals []string
			for _, l := range m.GetLabel() {
				vals = append(vals, l.GetValue())
			}
			out[strings.Join(vals, "|")] = m
		}
	}
	return out
}

// jobsBy sums queuemax_jobs by one of its labels.
func jobsBy(t *testing.T, reg *prometheus.Registry, label string) map[string]int64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]int64{}
	for _, mf := range mfs {
		if mf.GetName() != "queuemax_jobs" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] += int64(m.GetGauge().GetValue())
				}
			}
		}
	}
	return out
}

func TestCollector_CountsMatchStats(t *testing.T) {
	t.Parallel()
	var retriedOnce atomic.Bool
	hs := []queuemax.Handler{
		queuemax.Define("t.OK", queuemax.TaskOptions{}, func(context.Context, struct{}) error { return nil }),
		queuemax.Define("t.Fail", queuemax.TaskOptions{}, func(context.Context, struct{}) error {
			return queuemax.Permanent(errors.New("broken"))
		}),
		queuemax.Define("t.Retry", queuemax.TaskOptions{}, func(context.Context, struct{}) error {
			if retriedOnce.CompareAndSwap(false, true) {
				return queuemax.RetryAfter(time.Millisecond, errors.New("once"))
			}
			return nil
		}),
	}
	b := setup(t, Options{}, queuemax.Config{Shards: 2, Handlers: hs, AllowUnknownTasks: true}) // t.Idle has no handler on purpose
	completed, _ := b.c.Subscribe(queuemax.EventCompleted)                                      // closed by Close
	dead, _ := b.c.Subscribe(queuemax.EventFailed)                                              // closed by Close
	var params []queuemax.EnqueueParams
	for _, task := range []string{"t.OK", "t.OK", "t.OK", "t.Fail", "t.Retry", "t.Idle", "t.Idle"} {
		params = append(params, queuemax.EnqueueParams{Task: task, Payload: struct{}{}})
	}
	if _, err := b.c.EnqueueMany(b.ctx, params); err != nil {
		t.Fatal(err)
	}
	stop := queuemaxtest.Run(t, b.c)
	for range 4 { // three t.OK and t.Retry's second attempt
		<-completed
	}
	<-dead
	stop()

	want := `
# HELP queuemax_jobs_enqueued_total Jobs enqueued by this process.
# TYPE queuemax_jobs_enqueued_total counter
queuemax_jobs_enqueued_total{task="t.Fail"} 1
queuemax_jobs_enqueued_total{task="t.Idle"} 2
queuemax_jobs_enqueued_total{task="t.OK"} 3
queuemax_jobs_enqueued_total{task="t.Retry"} 1
# HELP queuemax_jobs_completed_total Jobs this process completed.
# TYPE queuemax_jobs_completed_total counter
queuemax_jobs_completed_total{task="t.OK"} 3
queuemax_jobs_completed_total{task="t.Retry"} 1
# HELP queuemax_jobs_failed_total Failed attempts in this process (retried plus dead-lettered).
# TYPE queuemax_jobs_failed_total counter
queuemax_jobs_failed_total{task="t.Fail"} 1
queuemax_jobs_failed_total{task="t.Retry"} 1
# HELP queuemax_jobs_retried_total Failed attempts in this process that will be retried.
# TYPE queuemax_jobs_retried_total counter
queuemax_jobs_retried_total{task="t.Retry"} 1
# HELP queuemax_jobs_dead_lettered_total Jobs this process moved to the dead-letter queue.
# TYPE queuemax_jobs_dead_lettered_total counter
queuemax_jobs_dead_lettered_total{task="t.Fail"} 1
`
	if err := testutil.GatherAndCompare(b.reg, strings.NewReader(want), "queuemax_jobs_enqueued_total",
		"queuemax_jobs_completed_total", "queuemax_jobs_failed_total", "queuemax_jobs_retried_total",
		"queuemax_jobs_dead_lettered_total"); err != nil {
		t.Error(err)
	}

	// One run-time observation per execution, one wait per start.
	runs := gather(t, b.reg, "queuemax_job_run_seconds")
	for key, n := range map[string]uint64{"completed|t.OK": 3, "dead_lettered|t.Fail": 1, "retry|t.Retry": 1, "completed|t.Retry": 1} {
		if got := runs[key].GetHistogram().GetSampleCount(); got != n {
			t.Errorf("job_run_seconds{outcome|task=%s} count = %d, want %d", key, got, n)
		}
	}
	waits := gather(t, b.reg, "queuemax_job_queue_wait_seconds")
	for key, n := range map[string]uint64{"t.OK": 3, "t.Fail": 1, "t.Retry": 2} {
		if got := waits[key].GetHistogram().GetSampleCount(); got != n {
			t.Errorf("job_queue_wait_seconds{task=%s} count = %d, want %d", key, got, n)
		}
	}

	// The job gauges agree with Stats and TaskStats.
	s, err := b.c.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	byStatus := jobsBy(t, b.reg, "status")
	for status, want := range map[string]int64{"pending": s.Pending, "scheduled": s.Scheduled, "processing": s.Processing,
		"failed": s.Failed, "completed": s.Completed} {
		if byStatus[status] != want {
			t.Errorf("sum(queuemax_jobs{status=%q}) = %d, Stats says %d", status, byStatus[status], want)
		}
	}
	if s.Pending != 2 || s.Failed != 1 {
		t.Errorf("Stats pending=%d failed=%d, want 2 and 1", s.Pending, s.Failed)
	}
	byTask := jobsBy(t, b.reg, "task")
	for _, task := range []string{"t.Idle", "t.Fail", "t.OK"} {
		ts, err := b.c.TaskStats(b.ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		if sum := ts.Pending + ts.Scheduled + ts.Processing + ts.Failed + ts.Completed; byTask[task] != sum {
			t.Errorf("sum(queuemax_jobs{task=%q}) = %d, TaskStats says %d", task, byTask[task], sum)
		}
	}
	byShard := jobsBy(t, b.reg, "shard")
	for _, ps := range s.PerShard {
		sum := ps.Pending + ps.Scheduled + ps.Processing + ps.Failed + ps.Completed
		if got := byShard[strconv.Itoa(ps.Shard)]; got != sum {
			t.Errorf("sum(queuemax_jobs{shard=%d}) = %d, Stats says %d", ps.Shard, got, sum)
		}
	}
	var deadSum float64
	for _, m := range gather(t, b.reg, "queuemax_dead_letters") {
		deadSum += m.GetGauge().GetValue()
	}
	if int64(deadSum) != s.DeadLetters || s.DeadLetters != 1 {
		t.Errorf("sum(queuemax_dead_letters) = %v, Stats says %d (want 1)", deadSum, s.DeadLetters)
	}
	if problems, err := testutil.GatherAndLint(b.reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestCollector_CachesCounts(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{RefreshInterval: time.Minute}, queuemax.Config{Shards: 1})
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.col.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	enqueue := func() {
		t.Helper()
		if _, err := b.c.Enqueue(b.ctx, "t.A", struct{}{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	pending := func() int64 { t.Helper(); return jobsBy(t, b.reg, "status")["pending"] }

	enqueue()
	if got := pending(); got != 1 {
		t.Fatalf("pending = %d, want 1", got)
	}
	enqueue()
	advance(59 * time.Second)
	if got := pending(); got != 1 {
		t.Errorf("pending within the refresh interval = %d, want the cached 1", got)
	}
	advance(time.Second)
	if got := pending(); got != 2 {
		t.Errorf("pending after the refresh interval = %d, want 2", got)
	}
	// The event counter is live, not cached.
	if got := gather(t, b.reg, "queuemax_jobs_enqueued_total")["t.A"].GetCounter().GetValue(); got != 2 {
		t.Errorf("enqueued_total = %v, want 2", got)
	}
}

func TestCollector_EngineState(t *testing.T) {
	t.Parallel()
	hs := []queuemax.Handler{
		queuemax.Define("t.Fail", queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0)}, func(context.Context, struct{}) error {
			return queuemax.Unavailable(errors.New("down")) // a dependency failure: counts against the breaker
		}),
		queuemax.Define("t.Limited", queuemax.TaskOptions{RateLimit: queuemax.Rate{Limit: 1, Per: time.Hour}},
			func(context.Context, struct{}) error { return nil }),
	}
	live := Options{LiveWorkers: func(context.Context) (int, error) { return 3, nil }}
	b := setup(t, live, queuemax.Config{Shards: 1, Handlers: hs, CircuitThreshold: 1, Workers: 2})
	dead, _ := b.c.Subscribe(queuemax.EventFailed) // closed by Close
	for _, task := range []string{"t.Fail", "t.Limited", "t.Limited"} {
		if _, err := b.c.Enqueue(b.ctx, task, struct{}{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	stop := queuemaxtest.Run(t, b.c)
	<-dead
	// The second t.Limited job waits for a token: poll until a claim round
	// has left it out.
	deadline := time.Now().Add(20 * time.Second)
	for b.c.RateLimitWaits()["t.Limited"] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no rate-limit wait counted for t.Limited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	states := gather(t, b.reg, "queuemax_circuit_breaker_state")
	for key, want := range map[string]float64{"open|t.Fail": 1, "closed|t.Fail": 0, "closed|t.Limited": 1} {
		if got := states[key].GetGauge().GetValue(); got != want {
			t.Errorf("circuit_breaker_state{state|task=%s} = %v, want %v", key, got, want)
		}
	}
	if got := gather(t, b.reg, "queuemax_circuit_breaker_failures")["t.Fail"].GetGauge().GetValue(); got != 1 {
		t.Errorf("circuit_breaker_failures{task=t.Fail} = %v, want 1", got)
	}
	if got := gather(t, b.reg, "queuemax_rate_limit_waits_total")["t.Limited"].GetCounter().GetValue(); got < 1 {
		t.Errorf("rate_limit_waits_total{task=t.Limited} = %v, want ≥ 1", got)
	}
	if got := gather(t, b.reg, "queuemax_workers_live")[""].GetGauge().GetValue(); got != 3 {
		t.Errorf("workers_live = %v, want 3 (from Options.LiveWorkers)", got)
	}
	if got := gather(t, b.reg, "queuemax_worker_concurrency")[""].GetGauge().GetValue(); got != 2 {
		t.Errorf("worker_concurrency = %v, want 2", got)
	}
	stop()
}

func TestCollector_RefreshErrorKeepsLastCounts(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{RefreshInterval: time.Nanosecond}, queuemax.Config{Shards: 1})
	if _, err := b.c.Enqueue(b.ctx, "t.A", struct{}{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	if got := jobsBy(t, b.reg, "status")["pending"]; got != 1 {
		t.Fatalf("pending = %d, want 1", got)
	}
	b.c.Close() // every store read now fails
	if got := jobsBy(t, b.reg, "status")["pending"]; got != 1 {
		t.Errorf("pending after a failed refresh = %d, want the last 1", got)
	}
	if got := testutil.ToFloat64(b.col.refreshErrs); got < 1 {
		t.Errorf("stats_refresh_errors_total = %v, want ≥ 1", got)
	}
}

// TestCollector_CountsEveryEvent: the counters lose no event, even while a
// Subscribe channel drops them, count from Attach, and stop at detach
// (which still counts what came before it).
func TestCollector_CountsEveryEvent(t *testing.T) {
	t.Parallel()
	col := NewCollector(Options{})
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: t.TempDir(), Shards: 2, AllowUnknownTasks: true,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	enqueue := func(n int) {
		t.Helper()
		ps := make([]queuemax.EnqueueParams, n)
		for i := range ps {
			ps[i] = queuemax.EnqueueParams{Task: "t.A", Payload: struct{}{}}
		}
		if _, err := c.EnqueueMany(t.Context(), ps); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(5) // before Attach: not counted
	detach := col.Attach(c)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	_, cancel := c.SubscribeConfig(&queuemax.SubscribeConfig{ChanSize: 1}) // never read: drops
	defer cancel()
	enqueue(2000)
	if got := gather(t, reg, "queuemax_jobs_enqueued_total")["t.A"].GetCounter().GetValue(); got != 2000 {
		t.Errorf("enqueued_total = %v, want 2000", got)
	}
	if d := c.EventStats().Dropped; d == 0 {
		t.Errorf("EventStats().Dropped = 0; the channel was meant to overflow")
	}
	enqueue(3)
	detach() // counts the 3 without a scrape
	enqueue(7)
	if got := gather(t, reg, "queuemax_jobs_enqueued_total")["t.A"].GetCounter().GetValue(); got != 2003 {
		t.Errorf("enqueued_total after detach = %v, want 2003", got)
	}
}
