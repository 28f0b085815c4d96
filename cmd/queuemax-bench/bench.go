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
	// layout is the SQLite layout of every data directory created (""
	// : a new directory's default, native).
	layout queuemax.SQLiteLayout
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
			case "bulk":
				err = b.pgBulk(ctx)
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
			case "limits":
				err = b.limits(ctx)
			case "workflow":
				err = b.workflow(ctx)
			case "steps":
				err = b.steps(ctx) // steps.go
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
		case name == "limits":
			err = b.limits(ctx)
		case name == "workflow":
			err = b.workflow(ctx)
		case name == "steps":
			err = b.steps(ctx) // steps.go
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
	f, err := measureFloor(ctx, dir, shards, jobs, smallBatch, b.o.layout)
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

// createLayout creates cfg's data directory in the layout of -layout,
// when one is given and cfg uses the SQLite store; the client then opens
// the directory in the layout it has.
func (b *bench) createLayout(ctx context.Context, cfg queuemax.Config) error {
	if b.o.layout == "" || cfg.Store != nil {
		return nil
	}
	st, err := queuemax.OpenSQLite(ctx, queuemax.SQLiteOptions{Dir: cfg.Dir, Shards: cfg.Shards, Layout: b.o.layout})
	if err != nil {
		return err
	}
	return st.Close()
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
	if err := b.createLayout(ctx, cfg); err != nil {
		return nil, err
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

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
