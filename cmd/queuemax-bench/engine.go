package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/queuemax/queuemax"
)

// The engine scenarios of issue 13 (both stores): the second core's gain,
// enqueue CPU per job, and the CPU an idle Run burns.
const (
	procsJobs    = 20000 // per GOMAXPROCS setting, before -scale
	enqueue1Jobs = 20000 // one Enqueue call at a time, one goroutine
	enqueueBJobs = 100000
	idleSeconds  = 3 // of a Run with no jobs, after a second of settling; not scaled
)

// drainOnce enqueues jobs (batched) on a fresh store and drains them with
// the default Config, returning the drain's time and the process (and, on
// PostgreSQL, server) CPU per job.
func (b *bench) drainOnce(ctx context.Context, name string, jobs int) (time.Duration, cpuPair, error) {
	var (
		h       *harness
		cleanup func()
		err     error
	)
	if b.pg != nil {
		h, _, cleanup, err = b.openPG(ctx, name, 0, nil)
	} else {
		var dir string
		var rm func()
		if dir, rm, err = b.tempDir(name); err != nil {
			return 0, cpuPair{}, err
		}
		if h, err = b.open(ctx, dir, targetShards, scaleWorkers, nil); err != nil {
			rm()
			return 0, cpuPair{}, err
		}
		cleanup = func() { h.c.Close(); rm() }
	}
	if err != nil {
		return 0, cpuPair{}, err
	}
	defer cleanup()
	ids, _, err := enqueueBatched(ctx, h.c, jobs, 1000)
	if err != nil {
		return 0, cpuPair{}, err
	}
	checkIDs(b.rep, name, ids)
	tr := newTracker(ids, jobs)
	m := b.startCPUMeter(ctx)
	d, err := h.process(ctx, tr, nil)
	if err != nil {
		return 0, cpuPair{}, err
	}
	cpu := m.stop(ctx, jobs)
	tr.check(b.rep, name, once)
	checkStore(ctx, b.rep, name, h.c, 0, int64(jobs), 0)
	return d, cpu, nil
}

// meter measures this process's CPU and, on PostgreSQL, the server's.
type meter struct {
	pg     *cpuMeter
	client time.Duration
}

func (b *bench) startCPUMeter(ctx context.Context) meter {
	if b.pg != nil {
		return meter{pg: b.pg.startCPU(ctx, pgApp())}
	}
	return meter{client: cpuTime()}
}

func (m meter) stop(ctx context.Context, jobs int) cpuPair {
	if m.pg != nil {
		c, s := m.pg.stop(ctx, jobs)
		return cpuPair{c, s}
	}
	return cpuPair{Client: (cpuTime() - m.client) / time.Duration(max(jobs, 1))}
}

// cpuText formats CPU per job for a note.
func (b *bench) cpuText(c cpuPair) string {
	s := fmt.Sprintf("CPU per job %.1fµs", us(c.Client))
	if b.pg != nil && b.pg.local {
		s += fmt.Sprintf(" (server %.1fµs)", us(c.Server))
	}
	return s
}

// procs drains the same number of jobs with GOMAXPROCS=1, then 2: the
// second core must help (≥ 1.4×).
func (b *bench) procs(ctx context.Context) error {
	jobs := b.n(procsJobs, 400)
	label := fmt.Sprintf("procs %d jobs, default Config, %dw/%ds", jobs, scaleWorkers, targetShards)
	if b.pg != nil {
		label = fmt.Sprintf("pg procs %d jobs, default Config (10 workers)", jobs)
	}
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var rates [2]float64
	for i, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		d, cpu, err := b.drainOnce(ctx, "procs", jobs)
		if err != nil {
			return fmt.Errorf("GOMAXPROCS=%d: %w", procs, err)
		}
		rates[i] = rate(jobs, d)
		b.rep.add(label, fmt.Sprintf("processing, GOMAXPROCS=%d", procs), rates[i], "jobs/s").note("%s", b.cpuText(cpu))
	}
	runtime.GOMAXPROCS(prev)
	r := b.rep.add(label, "GOMAXPROCS=2 / GOMAXPROCS=1", rates[1]/rates[0], "×")
	if b.pg != nil {
		r.target("≥ 1.4×", r.Value >= 1.4)
	} else {
		r.target("≥ 1.3×", r.Value >= 1.3)
	}
	if runtime.NumCPU() < 2 {
		r.note("this machine has %d CPU", runtime.NumCPU())
	}
	return nil
}

// enqueueCPU measures enqueue CPU per job on SQLite: one Enqueue call at a
// time from one goroutine (≤ 20µs, ≥ 50% of the minimal floor's rate), and
// batches of 1,000 against the minimal floor (≥ 60%). (PostgreSQL's enqueue
// scenario reports the same figures.)
func (b *bench) enqueueCPU(ctx context.Context) error {
	n1, nb := b.n(enqueue1Jobs, 200), b.n(enqueueBJobs, 1000)
	f, err := b.floor(ctx, targetShards, nb, 0)
	if err != nil {
		return err
	}
	b.addFloor(f)
	label := fmt.Sprintf("enqueue, default Config, %ds", targetShards)
	for _, batched := range []bool{false, true} {
		dir, rm, err := b.tempDir("enqueue")
		if err != nil {
			return err
		}
		h, err := b.open(ctx, dir, targetShards, scaleWorkers, nil)
		if err != nil {
			rm()
			return err
		}
		n := n1
		cpu0 := cpuTime()
		var ids []queuemax.JobID
		var d time.Duration
		if batched {
			n = nb
			ids, d, err = enqueueBatched(ctx, h.c, n, 1000)
		} else {
			ids, d, err = enqueueSingle(ctx, h.c, n, 1)
		}
		cpu := (cpuTime() - cpu0) / time.Duration(n)
		if err == nil {
			checkIDs(b.rep, "enqueue", ids)
			checkStore(ctx, b.rep, "enqueue", h.c, int64(n), 0, 0)
		}
		h.c.Close()
		rm()
		if err != nil {
			return err
		}
		if batched {
			r := b.rep.add(label, fmt.Sprintf("enqueue %d, batches of 1,000", n), rate(n, d), "jobs/s").vsFloor(f.Min.InsertBatch)
			r.target("≥ 50% of floor", r.Ratio >= 0.5) // issue 34
			r.note("CPU per job %.1fµs (minimal floor %.1fµs)", us(cpu), us(f.Min.InsertBatchCPU))
			continue
		}
		r := b.rep.add(label, fmt.Sprintf("enqueue %d, 1 call at a time", n), rate(n, d), "jobs/s").vsFloor(f.Min.Insert1)
		r.target("≥ 50% of floor", r.Ratio >= 0.5).note("minimal floor CPU per job %.1fµs", us(f.Min.Insert1CPU))
		r = b.rep.add(label, "enqueue, 1 call at a time: CPU per job", us(cpu), "µs")
		// Issue 34: at most twice the minimal floor's one-row INSERT.
		r.Floor, r.Ratio = us(f.Min.Insert1CPU), us(cpu)/us(f.Min.Insert1CPU)
		r.target("≤ 2× floor", r.Ratio <= 2)
	}
	return nil
}

// idle runs a client with workers and no jobs for a few seconds and
// reports its CPU use as a share of one core (≤ 1%).
func (b *bench) idle(ctx context.Context) error {
	secs := idleSeconds
	var (
		h       *harness
		cleanup func()
		err     error
	)
	kept := b.n(idleKept, 1000)
	label := fmt.Sprintf("idle Run, %dw/%ds, %d completed jobs kept, %ds", scaleWorkers, targetShards, kept, secs)
	if b.pg != nil {
		label = fmt.Sprintf("pg idle Run, default Config, %ds", secs)
		h, _, cleanup, err = b.openPG(ctx, "idle", 0, nil)
	} else {
		var dir string
		var rm func()
		if dir, rm, err = b.tempDir("idle"); err != nil {
			return err
		}
		if h, err = b.open(ctx, dir, targetShards, scaleWorkers, nil); err != nil {
			rm()
			return err
		}
		cleanup = func() { h.c.Close(); rm() }
	}
	if err != nil {
		return err
	}
	defer cleanup()
	if b.pg == nil {
		// The idle cost must not grow with the completed jobs retention
		// keeps: run and keep kept jobs first (default Config).
		ids, _, err := enqueueBatched(ctx, h.c, kept, 1000)
		if err != nil {
			return err
		}
		tr := newTracker(ids, kept)
		if _, err := h.process(ctx, tr, nil); err != nil {
			return err
		}
		s, err := h.c.Stats(ctx)
		if err != nil {
			return err
		}
		if s.Completed != int64(kept) {
			b.rep.fail("idle: %d completed jobs kept, want %d", s.Completed, kept)
		}
		h.tr.Store(newTracker(nil, 1))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- h.c.Run(runCtx) }()
	// Let Run start and settle into its idle wait (its first polls and
	// maintenance round are not idling).
	settle := time.NewTimer(time.Second)
	select {
	case <-settle.C:
	case err := <-errc:
		return fmt.Errorf("Run returned early: %v", err)
	}
	m := b.startCPUMeter(ctx)
	start := time.Now()
	wait := time.NewTimer(time.Duration(secs) * time.Second)
	select {
	case <-wait.C:
	case err := <-errc:
		return fmt.Errorf("Run returned early: %v", err)
	}
	wall := time.Since(start)
	cpu := m.stop(ctx, 1)
	cancel()
	if err := <-errc; err != nil {
		return err
	}
	pct := 100 * float64(cpu.Client) / float64(wall)
	r := b.rep.add(label, "process CPU", pct, "% of a core")
	r.target("≤ 1%", pct <= 1)
	if b.pg != nil && b.pg.local {
		r.note("server %.2f%% of a core", 100*float64(cpu.Server)/float64(wall))
	}
	return nil
}

// processing is issue 22's processing target on SQLite: jobs enqueued in
// batches, then drained with the default Config (completed jobs kept, as
// by default) on 4 shards and 16 workers, against the minimal floor
// measured on the same layout right before: ≥ 30% of its rate and ≤ 10µs
// of process CPU per job.
func (b *bench) processing(ctx context.Context) error {
	jobs := b.n(targetJobs, 400)
	f, err := b.floor(ctx, targetShards, jobs, scaleWorkers)
	if err != nil {
		return err
	}
	b.addFloor(f)
	d, cpu, err := b.drainOnce(ctx, "processing", jobs)
	if err != nil {
		return err
	}
	label := fmt.Sprintf("processing %d jobs, default Config, %dw/%ds", jobs, scaleWorkers, targetShards)
	r := b.rep.add(label, "processing", rate(jobs, d), "jobs/s").vsFloor(f.Min.Process)
	r.target("≥ 30% of floor", r.Ratio >= 0.3).note("schema floor %s jobs/s; minimal floor with claims of %d: %s jobs/s",
		fmtNum(f.Process), f.Min.SmallBatch, fmtNum(f.Min.ProcessSmall))
	r = b.rep.add(label, "processing: CPU per job", us(cpu.Client), "µs")
	r.Floor, r.Ratio = us(f.Min.ProcessCPU), us(cpu.Client)/us(f.Min.ProcessCPU)
	// Issue 34: at most three times the minimal floor's CPU per job.
	r.target("≤ 3× floor", r.Ratio <= 3).note("minimal floor %.1fµs, schema floor %.1fµs per job", us(f.Min.ProcessCPU), us(f.ProcessCPU))
	return nil
}
