package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax"
)

// options are the command-line settings a run needs.
type options struct {
	scale   float64
	dir     string
	verbose bool
	stderr  io.Writer
	store   string // "sqlite" or "postgres"
	dsn     string // the PostgreSQL server, for -store postgres
	// retention is Config.CompletedRetention of every client (0: the
	// default; queuemax.RetentionOff: delete completed jobs at once).
	retention time.Duration
}

// bench runs scenarios and collects their results.
type bench struct {
	o   options
	log *slog.Logger
	rep *Report
	pg  *pgEnv // the PostgreSQL server, for -store postgres
}

func newBench(o options) *bench {
	log := slog.New(slog.DiscardHandler)
	if o.verbose {
		log = slog.New(slog.NewTextHandler(o.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return &bench{o: o, log: log, rep: &Report{Machine: machine(), Scale: o.scale}}
}

// n scales a job count, never below min.
func (b *bench) n(count, min int) int {
	return max(min, int(float64(count)*b.o.scale+0.5))
}

// Scenario sizes, before -scale.
const (
	burstJobs, burstWorkers, burstShards                = 20000, 20, 10
	contentionJobs, contentionWorkers, contentionShards = 10000, 10, 1
	failureJobs, failureWorkers, failureShards          = 5000, 8, 6
	scaleJobs, scaleWorkers, scaleShards                = 100000, 16, 8
	// The layout of issue 22's targets (the processing, enqueue, procs,
	// latency and idle scenarios on SQLite): 4 shards, 16 workers.
	targetJobs, targetShards    = 100000, 4
	idleKept                    = 100000 // completed jobs kept while the idle Run is measured
	depthDeep, depthShallow     = 1000000, 10000
	latencySamples, latencyRate = 1000, 200 // jobs, jobs/s
	taskNoop                    = "bench.noop"
)

func (b *bench) run(ctx context.Context, chosen []string) *Report {
	start := time.Now()
	b.rep.Started = start.UTC().Format(time.RFC3339)
	b.rep.Store = "sqlite"
	if b.o.store == "postgres" {
		if err := b.pgConnect(ctx); err != nil {
			b.rep.fail("postgres: %v", err)
			b.rep.Seconds = time.Since(start).Seconds()
			return b.rep
		}
		defer b.pg.close()
	}
	for _, name := range chosen {
		if ctx.Err() != nil {
			b.rep.fail("interrupted before %s", name)
			break
		}
		fmt.Fprintf(b.o.stderr, "queuemax-bench: %s …", name)
		began := time.Now()
		var err error
		switch {
		case b.pg != nil:
			switch name {
			case "floor":
				err = b.pgFloorScenario(ctx)
			case "processing":
				err = b.pgProcessing(ctx)
			case "enqueue":
				err = b.pgEnqueue(ctx)
			case "failure":
				err = b.failure(ctx)
			case "depth":
				err = b.depth(ctx)
			case "latency":
				err = b.latency(ctx)
			case "procs":
				err = b.procs(ctx)
			case "idle":
				err = b.idle(ctx)
			}
		case name == "floor":
			err = b.floorScenario(ctx)
		case name == "processing":
			err = b.processing(ctx)
		case name == "burst":
			err = b.throughput(ctx, "burst", b.n(burstJobs, 200), burstWorkers, burstShards)
		case name == "contention":
			err = b.throughput(ctx, "contention", b.n(contentionJobs, 100), contentionWorkers, contentionShards)
		case name == "failure":
			err = b.failure(ctx)
		case name == "scale":
			err = b.scaleScenario(ctx)
		case name == "depth":
			err = b.depth(ctx)
		case name == "latency":
			err = b.latency(ctx)
		case name == "enqueue":
			err = b.enqueueCPU(ctx)
		case name == "procs":
			err = b.procs(ctx)
		case name == "idle":
			err = b.idle(ctx)
		}
		fmt.Fprintf(b.o.stderr, " %.1fs\n", time.Since(began).Seconds())
		if err != nil {
			b.rep.fail("%s: %v", name, err)
		}
		runtime.GC()
		debug.FreeOSMemory()
	}
	b.rep.Seconds = time.Since(start).Seconds()
	return b.rep
}

// tempDir returns a fresh data directory and its cleanup.
func (b *bench) tempDir(name string) (string, func(), error) {
	dir, err := os.MkdirTemp(b.o.dir, "queuemax-bench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// openStore opens a client for a scenario on the store measured: a fresh
// data directory of shards shards on SQLite, a fresh schema on PostgreSQL
// (shards do not apply). close closes the client and removes what it
// stored. prefix is what the scenario's labels start with ("pg " on
// PostgreSQL).
func (b *bench) openStore(ctx context.Context, name string, shards, workers int, mod func(*queuemax.Config)) (h *harness, prefix string, close func(), err error) {
	if b.pg != nil {
		h, _, close, err := b.openPG(ctx, name, workers, mod)
		return h, "pg ", close, err
	}
	dir, cleanup, err := b.tempDir(name)
	if err != nil {
		return nil, "", nil, err
	}
	h, err = b.open(ctx, dir, shards, workers, mod)
	if err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return h, "", func() { h.c.Close(); cleanup() }, nil
}

// layout names a scenario's workers and, on SQLite, shards.
func (b *bench) layout(workers, shards int) string {
	if b.pg != nil {
		return fmt.Sprintf("%dw", workers)
	}
	return fmt.Sprintf("%dw/%ds", workers, shards)
}

// floor measures the floors for a layout: the minimal floor first, then
// the schema floor, each on fresh files. Scenarios measure them right
// before they run, so that all see the same machine load.
func (b *bench) floor(ctx context.Context, shards, jobs, smallBatch int) (floorResult, error) {
	dir, cleanup, err := b.tempDir(fmt.Sprintf("minfloor%d", shards))
	if err != nil {
		return floorResult{}, err
	}
	m, err := measureMinFloor(ctx, dir, shards, jobs, smallBatch)
	cleanup()
	if err != nil {
		return floorResult{}, fmt.Errorf("minimal floor (%d shards): %w", shards, err)
	}
	dir, cleanup, err = b.tempDir(fmt.Sprintf("floor%d", shards))
	if err != nil {
		return floorResult{}, err
	}
	defer cleanup()
	f, err := measureFloor(ctx, dir, shards, jobs, smallBatch)
	if err != nil {
		return f, fmt.Errorf("schema floor (%d shards): %w", shards, err)
	}
	f.Min = m
	return f, nil
}

// addFloor reports both floors of f.
func (b *bench) addFloor(f floorResult) {
	name := fmt.Sprintf("minimal floor %d shard(s)", f.Shards)
	m := f.Min
	b.rep.add(name, "insert, 1 per tx", m.Insert1, "rows/s").note("CPU per job %.1fµs", us(m.Insert1CPU))
	b.rep.add(name, "insert, 1,000 per tx", m.InsertBatch, "rows/s").note("CPU per job %.1fµs", us(m.InsertBatchCPU))
	b.rep.add(name, fmt.Sprintf("claim+delete 100/tx, %d jobs", 2*f.Jobs), m.Process, "jobs/s").note("CPU per job %.1fµs", us(m.ProcessCPU))
	if m.SmallBatch > 0 {
		b.rep.add(name, fmt.Sprintf("claim+delete %d/tx, %d jobs", m.SmallBatch, f.Jobs), m.ProcessSmall, "jobs/s").vsFloor(m.Process)
	}
	name = fmt.Sprintf("schema floor %d shard(s) (what the schema costs)", f.Shards)
	b.rep.add(name, "insert, 1 per tx", f.Insert1, "rows/s").vsFloor(m.Insert1).note("CPU per job %.1fµs", us(f.Insert1CPU))
	b.rep.add(name, "insert, 1,000 per tx", f.InsertBatch, "rows/s").vsFloor(m.InsertBatch).note("CPU per job %.1fµs", us(f.InsertBatchCPU))
	b.rep.add(name, fmt.Sprintf("claim+delete 100/tx, %d jobs", 2*f.Jobs), f.Process, "jobs/s").vsFloor(m.Process).
		note("CPU per job %.1fµs", us(f.ProcessCPU))
	if f.SmallBatch > 0 {
		b.rep.add(name, fmt.Sprintf("claim+delete %d/tx, %d jobs", f.SmallBatch, f.Jobs), f.ProcessSmall, "jobs/s").vsFloor(m.Process)
	}
}

func (b *bench) floorScenario(ctx context.Context) error {
	for _, l := range []struct{ shards, jobs, workers int }{
		{targetShards, b.n(targetJobs, 400), scaleWorkers},
		{burstShards, b.n(burstJobs, 200), burstWorkers},
		{contentionShards, b.n(contentionJobs, 100), contentionWorkers},
		{scaleShards, b.n(scaleJobs, 400), scaleWorkers},
	} {
		f, err := b.floor(ctx, l.shards, l.jobs, l.workers)
		if err != nil {
			return err
		}
		b.addFloor(f)
	}
	return nil
}

// noopArgs is the payload of the no-op task.
type noopArgs struct {
	N int `json:"n"`
}

// tracker counts, per enqueued job, how often a handler ran it, and
// signals when the expected number of jobs has finished (success
// committed, or dead-lettered).
type tracker struct {
	index   map[queuemax.JobID]int32 // filled before Run starts; read-only while it runs
	runs    []atomic.Int32
	unknown atomic.Int64
	failing func(i int) bool // jobs whose handler always fails; nil: none

	want   int64
	done   atomic.Int64
	doneCh chan struct{}
}

func newTracker(ids []queuemax.JobID, want int) *tracker {
	t := &tracker{index: make(map[queuemax.JobID]int32, len(ids)), runs: make([]atomic.Int32, len(ids)),
		want: int64(want), doneCh: make(chan struct{})}
	for i, id := range ids {
		t.index[id] = int32(i)
	}
	return t
}

var errInjected = errors.New("bench: injected failure")

func (t *tracker) handle(_ context.Context, j *queuemax.Job) (any, error) {
	i, ok := t.index[j.ID]
	if !ok {
		t.unknown.Add(1)
		return nil, nil
	}
	t.runs[i].Add(1)
	if t.failing != nil && t.failing(int(i)) {
		return nil, errInjected
	}
	return nil, nil
}

func (t *tracker) finished() {
	if t.done.Add(1) == t.want {
		close(t.doneCh)
	}
}

// check reports duplicates (more runs than expected) and losses (fewer)
// over the jobs expected to have finished.
func (t *tracker) check(rep *Report, scenario string, expect func(i int) int32) {
	dups, losses := 0, 0
	for i := range t.runs {
		got, want := t.runs[i].Load(), expect(i)
		switch {
		case got > want:
			dups++
		case got < want:
			losses++
		}
	}
	if dups > 0 || losses > 0 || t.unknown.Load() > 0 {
		rep.fail("%s: exactly-once violated: %d duplicated, %d lost, %d unknown job ids", scenario, dups, losses, t.unknown.Load())
	}
}

// harness is one client whose handler reports to the current tracker.
type harness struct {
	c  *queuemax.Client
	tr atomic.Pointer[tracker]
}

func (b *bench) open(ctx context.Context, dir string, shards, workers int, mod func(*queuemax.Config)) (*harness, error) {
	h := &harness{}
	cfg := queuemax.Config{
		Dir: dir, Shards: shards, Workers: workers, Logger: b.log,
		Handlers: []queuemax.Handler{{Name: taskNoop, Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
			return h.tr.Load().handle(ctx, j)
		}}},
		Hooks: queuemax.Hooks{
			OnComplete: func(context.Context, *queuemax.Job, any) { h.tr.Load().finished() },
			OnError: func(_ context.Context, _ *queuemax.Job, _ error, out queuemax.FailOutcome) {
				if out.Dead {
					h.tr.Load().finished()
				}
			},
		},
	}
	cfg.CompletedRetention = b.o.retention
	if mod != nil {
		mod(&cfg)
	}
	c, err := queuemax.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h.c = c
	return h, nil
}

// process runs the client until its tracker has seen every expected job
// finish and returns the time from Run's start to then. Run is stopped
// (drained) before it returns; before stops, if set, runs while Run is
// still active.
func (h *harness) process(ctx context.Context, tr *tracker, before func()) (time.Duration, error) {
	h.tr.Store(tr)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	start := time.Now()
	go func() { errc <- h.c.Run(runCtx) }()
	timeout := time.NewTimer(2*time.Minute + time.Duration(tr.want)*time.Millisecond)
	defer timeout.Stop()
	var elapsed time.Duration
	select {
	case <-tr.doneCh:
		elapsed = time.Since(start)
	case err := <-errc:
		return 0, fmt.Errorf("Run returned before the jobs finished: %v", err)
	case <-timeout.C:
		cancel()
		<-errc
		return 0, fmt.Errorf("timed out with %d of %d jobs finished", tr.done.Load(), tr.want)
	case <-ctx.Done():
		<-errc
		return 0, ctx.Err()
	}
	if before != nil {
		before()
	}
	cancel()
	if err := <-errc; err != nil {
		return elapsed, fmt.Errorf("Run: %w", err)
	}
	return elapsed, nil
}

func noopJobs(from, n int) []queuemax.EnqueueParams {
	ps := make([]queuemax.EnqueueParams, n)
	for i := range ps {
		ps[i] = queuemax.EnqueueParams{Task: taskNoop, Payload: noopArgs{N: from + i}}
	}
	return ps
}

// enqueueBatched enqueues n jobs with EnqueueMany, batch at a time.
func enqueueBatched(ctx context.Context, c *queuemax.Client, n, batch int) ([]queuemax.JobID, time.Duration, error) {
	ids := make([]queuemax.JobID, 0, n)
	start := time.Now()
	for len(ids) < n {
		got, err := c.EnqueueMany(ctx, noopJobs(len(ids), min(batch, n-len(ids))))
		if err != nil {
			return nil, 0, err
		}
		ids = append(ids, got...)
	}
	return ids, time.Since(start), nil
}

// enqueueSingle enqueues n jobs from g goroutines, one Enqueue call per job.
func enqueueSingle(ctx context.Context, c *queuemax.Client, n, g int) ([]queuemax.JobID, time.Duration, error) {
	ids := make([]queuemax.JobID, n)
	var wg sync.WaitGroup
	errs := make([]error, g)
	start := time.Now()
	for k := range g {
		wg.Go(func() {
			for i := k; i < n; i += g {
				id, err := c.Enqueue(ctx, taskNoop, noopArgs{N: i}, queuemax.Opts{})
				if err != nil {
					errs[k] = err
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	return ids, d, errors.Join(errs...)
}

// checkIDs fails the run if ids holds a duplicate or a zero ID.
func checkIDs(rep *Report, scenario string, ids []queuemax.JobID) {
	seen := make(map[queuemax.JobID]struct{}, len(ids))
	for _, id := range ids {
		if id == 0 {
			rep.fail("%s: an enqueue returned no id", scenario)
			return
		}
		if _, dup := seen[id]; dup {
			rep.fail("%s: enqueue returned id %d twice", scenario, id)
			return
		}
		seen[id] = struct{}{}
	}
}

// checkStore fails the run unless the store holds exactly remaining
// unfinished jobs (pending, scheduled or processing), has recorded
// processed completions and dead dead-lettered jobs.
func checkStore(ctx context.Context, rep *Report, scenario string, c *queuemax.Client, remaining, processed, dead int64) {
	s, err := c.Stats(ctx)
	if err != nil {
		rep.fail("%s: Stats: %v", scenario, err)
		return
	}
	if got := s.Pending + s.Scheduled + s.Processing; got != remaining || s.Processing != 0 {
		rep.fail("%s: store holds %d unfinished jobs (%d processing), want %d (0 processing)", scenario, got, s.Processing, remaining)
	}
	if s.TotalProcessed != processed {
		rep.fail("%s: store recorded %d completions, want %d", scenario, s.TotalProcessed, processed)
	}
	if s.TotalFailed != dead || s.DeadLetters != dead {
		rep.fail("%s: store recorded %d dead-lettered (%d dead-letter rows), want %d", scenario, s.TotalFailed, s.DeadLetters, dead)
	}
}

func once(int) int32 { return 1 }

// throughput is the burst and contention scenarios: enqueue jobs (batched),
// then process them all with one client of workers workers.
func (b *bench) throughput(ctx context.Context, name string, jobs, workers, shards int) error {
	f, err := b.floor(ctx, shards, jobs, workers)
	if err != nil {
		return err
	}
	if err := b.throughputRun(ctx, f, name, jobs, workers, shards, 0); err != nil {
		return err
	}
	return b.throughputRun(ctx, f, name, jobs, workers, shards, tunedClaimBatch)
}

// tunedClaimBatch is the Config.ClaimBatch of the tuned runs: above
// Workers, so that each claim takes a batch of this size and the jobs
// without a free worker wait for one (prefetch).
const tunedClaimBatch = 100

// claimLabel names the ClaimBatch setting of a run.
func claimLabel(claimBatch int) string {
	if claimBatch == 0 {
		return ""
	}
	return fmt.Sprintf(", ClaimBatch %d", claimBatch)
}

// throughputRun is one run of a throughput scenario on a fresh data
// directory, with Config.ClaimBatch set to claimBatch (0: the default).
func (b *bench) throughputRun(ctx context.Context, f floorResult, name string, jobs, workers, shards, claimBatch int) error {
	dir, cleanup, err := b.tempDir(name)
	if err != nil {
		return err
	}
	defer cleanup()
	h, err := b.open(ctx, dir, shards, workers, func(c *queuemax.Config) { c.ClaimBatch = claimBatch })
	if err != nil {
		return err
	}
	defer h.c.Close()
	ids, enq, err := enqueueBatched(ctx, h.c, jobs, 1000)
	if err != nil {
		return err
	}
	checkIDs(b.rep, name, ids)
	tr := newTracker(ids, jobs)
	cpu0 := cpuTime()
	d, err := h.process(ctx, tr, nil)
	if err != nil {
		return err
	}
	cpu := (cpuTime() - cpu0) / time.Duration(jobs)
	tr.check(b.rep, name, once)
	checkStore(ctx, b.rep, name, h.c, 0, int64(jobs), 0)
	label := fmt.Sprintf("%s %d jobs, %dw/%ds", name, jobs, workers, shards)
	if claimBatch == 0 {
		b.rep.add(label, "enqueue, batches of 1,000", rate(jobs, enq), "jobs/s").vsFloor(f.Min.InsertBatch)
	}
	res := b.rep.add(label, "processing"+claimLabel(claimBatch), rate(jobs, d), "jobs/s").vsFloor(f.Min.Process)
	res.target("≥ 30% of floor", res.Ratio >= 0.3)
	res.note("CPU per job %.1fµs (minimal floor %.1fµs, schema floor %.1fµs)", us(cpu), us(f.Min.ProcessCPU), us(f.ProcessCPU))
	if claimBatch == 0 {
		res.Note += fmt.Sprintf("; minimal floor with claims of %d (the most Workers allows without prefetch): %s jobs/s (%.0f%% of floor)",
			f.Min.SmallBatch, fmtNum(f.Min.ProcessSmall), 100*f.Min.ProcessSmall/f.Min.Process)
	}
	return nil
}

// failure processes jobs of which 30% always fail, with two retries.
func (b *bench) failure(ctx context.Context) error {
	const name = "failure"
	jobs := b.n(failureJobs, 100)
	// Breakers are per task and count consecutive failures; with 30% of
	// jobs failing three times each, more than half of all attempts fail
	// and runs of 5 (the default threshold) are certain, which would park
	// the task for CircuitTimeout (60s). The threshold is set above the
	// number of failures the run can produce, so the breaker stays closed
	// and the run measures the retry path, not the breaker's timeout.
	threshold := 3*jobs + 1
	h, prefix, closeStore, err := b.openStore(ctx, name, failureShards, failureWorkers, func(c *queuemax.Config) {
		c.MaxRetries = queuemax.Ptr(2)
		c.CircuitThreshold = threshold
		c.Handlers[0].Options.RetryDelay = 10 * time.Millisecond // backoff 10ms, 20ms (±20%)
	})
	if err != nil {
		return err
	}
	defer closeStore()
	// Breaker transitions, exactly (the client's event totals).
	transitions := func() (n uint64) {
		for _, k := range h.c.EventStats().Emitted[queuemax.EventCircuit] {
			n += k
		}
		return n
	}
	transitions0 := transitions()
	ids, _, err := enqueueBatched(ctx, h.c, jobs, 1000)
	if err != nil {
		return err
	}
	checkIDs(b.rep, name, ids)
	tr := newTracker(ids, jobs)
	tr.failing = func(i int) bool { return i%10 < 3 }
	var breaker string
	cpu0 := cpuTime()
	d, err := h.process(ctx, tr, func() {
		if s, err := h.c.Stats(ctx); err == nil {
			breaker = s.CircuitState
		}
	})
	if err != nil {
		return err
	}
	cpu := (cpuTime() - cpu0) / time.Duration(jobs)
	dead := 0
	for i := range jobs {
		if tr.failing(i) {
			dead++
		}
	}
	tr.check(b.rep, name, func(i int) int32 {
		if tr.failing(i) {
			return 3 // first attempt and two retries
		}
		return 1
	})
	checkStore(ctx, b.rep, name, h.c, 0, int64(jobs-dead), int64(dead))
	label := fmt.Sprintf("%s%s %d jobs, 30%% failing, %s", prefix, name, jobs, b.layout(failureWorkers, failureShards))
	b.rep.add(label, "completed", float64(jobs-dead), "jobs")
	b.rep.add(label, "dead-lettered (after 3 attempts)", float64(dead), "jobs")
	b.rep.add(label, "processing incl. retries", rate(jobs, d), "jobs/s").
		note("CPU per job %.1fµs (incl. retries); breaker %s at the end, %d state changes (CircuitThreshold %d, per task); retry backoff base 10ms",
			us(cpu), breaker, transitions()-transitions0, threshold)
	return nil
}

// scaleScenario measures enqueue three ways and processing at 100k jobs,
// and the peak RSS throughout.
func (b *bench) scaleScenario(ctx context.Context) error {
	const name = "scale"
	jobs := b.n(scaleJobs, 400)
	f, err := b.floor(ctx, scaleShards, jobs, scaleWorkers)
	if err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	label := fmt.Sprintf("%s %d jobs, %dw/%ds", name, jobs, scaleWorkers, scaleShards)

	// One call at a time, then process what it stored.
	dir, cleanup, err := b.tempDir(name)
	if err != nil {
		return err
	}
	defer cleanup()
	h, err := b.open(ctx, dir, scaleShards, scaleWorkers, nil)
	if err != nil {
		return err
	}
	defer h.c.Close()
	cpu0 := cpuTime()
	ids, d1, err := enqueueSingle(ctx, h.c, jobs, 1)
	if err != nil {
		return err
	}
	cpu1 := (cpuTime() - cpu0) / time.Duration(jobs)
	checkIDs(b.rep, name, ids)
	tr := newTracker(ids, jobs)
	cpu0 = cpuTime()
	dp, err := h.process(ctx, tr, nil)
	cpuP := (cpuTime() - cpu0) / time.Duration(jobs)
	if err != nil {
		return err
	}
	tr.check(b.rep, name, once)
	checkStore(ctx, b.rep, name, h.c, 0, int64(jobs), 0)

	// 16 goroutines, one call each at a time (group commit).
	dir2, cleanup2, err := b.tempDir(name)
	if err != nil {
		return err
	}
	defer cleanup2()
	h2, err := b.open(ctx, dir2, scaleShards, scaleWorkers, nil)
	if err != nil {
		return err
	}
	defer h2.c.Close()
	cpu0 = cpuTime()
	ids, d16, err := enqueueSingle(ctx, h2.c, jobs, 16)
	if err != nil {
		return err
	}
	cpu16 := (cpuTime() - cpu0) / time.Duration(jobs)
	checkIDs(b.rep, name+" (16 producers)", ids)
	checkStore(ctx, b.rep, name+" (16 producers)", h2.c, int64(jobs), 0, 0)
	h2.c.Close()
	cleanup2()

	// Batches of 1,000.
	dir3, cleanup3, err := b.tempDir(name)
	if err != nil {
		return err
	}
	defer cleanup3()
	h3, err := b.open(ctx, dir3, scaleShards, scaleWorkers, nil)
	if err != nil {
		return err
	}
	defer h3.c.Close()
	cpu0 = cpuTime()
	ids, db, err := enqueueBatched(ctx, h3.c, jobs, 1000)
	if err != nil {
		return err
	}
	cpuB := (cpuTime() - cpu0) / time.Duration(jobs)
	checkIDs(b.rep, name+" (batched)", ids)
	checkStore(ctx, b.rep, name+" (batched)", h3.c, int64(jobs), 0, 0)
	h3.c.Close()
	// Process what the batches stored with ClaimBatch above Workers.
	h3, err = b.open(ctx, dir3, scaleShards, scaleWorkers, func(c *queuemax.Config) { c.ClaimBatch = tunedClaimBatch })
	if err != nil {
		return err
	}
	tr = newTracker(ids, jobs)
	cpu0 = cpuTime()
	dpTuned, err := h3.process(ctx, tr, nil)
	cpuT := (cpuTime() - cpu0) / time.Duration(jobs)
	if err != nil {
		return err
	}
	tr.check(b.rep, name+" (tuned)", once)
	checkStore(ctx, b.rep, name+" (tuned)", h3.c, 0, int64(jobs), 0)
	h3.c.Close()
	cleanup3()

	r := b.rep.add(label, "enqueue, 1 call at a time", rate(jobs, d1), "jobs/s").vsFloor(f.Min.Insert1)
	r.target("≥ 50% of floor", r.Ratio >= 0.5).note("CPU per job %.1fµs (minimal floor %.1fµs)", us(cpu1), us(f.Min.Insert1CPU))
	r = b.rep.add(label, "enqueue, 16 goroutines × 1 call", rate(jobs, d16), "jobs/s").vsFloor(f.Min.Insert1)
	r.target("> floor (1 per tx)", r.Ratio > 1).note("CPU per job %.1fµs", us(cpu16))
	r = b.rep.add(label, "enqueue, batches of 1,000", rate(jobs, db), "jobs/s").vsFloor(f.Min.InsertBatch)
	r.target("≥ 60% of floor", r.Ratio >= 0.6).note("CPU per job %.1fµs (minimal floor %.1fµs)", us(cpuB), us(f.Min.InsertBatchCPU))
	r = b.rep.add(label, "processing", rate(jobs, dp), "jobs/s").vsFloor(f.Min.Process)
	r.target("≥ 30% of floor", r.Ratio >= 0.3)
	r.note("CPU per job %.1fµs (minimal floor %.1fµs, schema floor %.1fµs); minimal floor with claims of %d: %s jobs/s (%.0f%% of floor)",
		us(cpuP), us(f.Min.ProcessCPU), us(f.ProcessCPU), f.Min.SmallBatch, fmtNum(f.Min.ProcessSmall), 100*f.Min.ProcessSmall/f.Min.Process)
	r = b.rep.add(label, "processing"+claimLabel(tunedClaimBatch), rate(jobs, dpTuned), "jobs/s").vsFloor(f.Min.Process)
	r.target("≥ 30% of floor", r.Ratio >= 0.3).note("CPU per job %.1fµs", us(cpuT))
	b.rep.add(label, "duplicates / losses", 0, "jobs").note("every job's handler ran exactly once; the store is empty afterwards")

	// Memory.
	peak, err := peakRSS()
	if err != nil {
		return err
	}
	mib := float64(peak) / (1 << 20)
	r = b.rep.add(fmt.Sprintf("memory %d jobs", jobs), "peak RSS during scale", mib, "MiB")
	r.target("< 200 MiB", mib < 200)
	if !resetPeakRSS {
		r.note("could not reset the peak before the scenario; the figure covers the whole run so far")
	}
	return nil
}

// peakRSS returns VmHWM from /proc/self/status in bytes.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// depth compares processing with a deep backlog against a shallow one: the
// first tenth of 1,000,000 queued jobs, against ten rounds of 10,000
// queued jobs (the same number of jobs processed).
func (b *bench) depth(ctx context.Context) error {
	const name = "depth"
	deep := b.n(depthDeep, 1000)
	shallow := b.n(depthShallow, 100)
	measured := deep / 10
	rounds := max(1, measured/shallow)

	// Shallow: rounds of shallow jobs, each processed to the end.
	h, prefix, closeShallow, err := b.openStore(ctx, name, scaleShards, scaleWorkers, nil)
	if err != nil {
		return err
	}
	defer closeShallow()
	var shallowTime, shallowCPU time.Duration
	for range rounds {
		ids, _, err := enqueueBatched(ctx, h.c, shallow, 1000)
		if err != nil {
			return err
		}
		tr := newTracker(ids, shallow)
		cpu0 := cpuTime()
		d, err := h.process(ctx, tr, nil)
		if err != nil {
			return err
		}
		shallowCPU += cpuTime() - cpu0
		tr.check(b.rep, name+" (shallow)", once)
		shallowTime += d
	}
	checkStore(ctx, b.rep, name+" (shallow)", h.c, 0, int64(rounds*shallow), 0)
	closeShallow()

	// Deep: queue them all, process the first measured.
	h2, _, closeDeep, err := b.openStore(ctx, name, scaleShards, scaleWorkers, nil)
	if err != nil {
		return err
	}
	defer closeDeep()
	ids, enq, err := enqueueBatched(ctx, h2.c, deep, 10000)
	if err != nil {
		return err
	}
	tr := newTracker(ids, measured)
	cpu0 := cpuTime()
	deepTime, err := h2.process(ctx, tr, nil)
	if err != nil {
		return err
	}
	deepCPU := (cpuTime() - cpu0) / time.Duration(max(tr.done.Load(), 1))
	// More than measured may have finished while Run drained: every job
	// ran at most once, and the store still holds exactly the others.
	ran := 0
	for i := range tr.runs {
		switch tr.runs[i].Load() {
		case 0:
		case 1:
			ran++
		default:
			b.rep.fail("%s: job %d ran %d times", name, ids[i], tr.runs[i].Load())
		}
	}
	if tr.unknown.Load() > 0 {
		b.rep.fail("%s: %d unknown job ids", name, tr.unknown.Load())
	}
	if int64(ran) != tr.done.Load() {
		b.rep.fail("%s: %d jobs ran but %d completions were committed", name, ran, tr.done.Load())
	}
	checkStore(ctx, b.rep, name+" (deep)", h2.c, int64(deep-ran), int64(ran), 0)

	label := prefix + name + " " + b.layout(scaleWorkers, scaleShards)
	sr := rate(rounds*shallow, shallowTime)
	b.rep.add(label, fmt.Sprintf("processing, %d queued (%d rounds)", shallow, rounds), sr, "jobs/s").
		note("CPU per job %.1fµs", us(shallowCPU/time.Duration(rounds*shallow)))
	b.rep.add(label, fmt.Sprintf("enqueue %d, batches of 10,000", deep), rate(deep, enq), "jobs/s")
	r := b.rep.add(label, fmt.Sprintf("processing, %d queued (first %d)", deep, measured), rate(measured, deepTime), "jobs/s")
	r.Floor, r.Ratio = sr, r.Value/sr
	r.target("≥ 80% of the shallow rate", r.Ratio >= 0.8).note("CPU per job %.1fµs (incl. the drain)", us(deepCPU))
	return nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
