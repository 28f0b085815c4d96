package main

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax"
)

// The global limits scenario of issue 23 (both stores): the same drain
// with and without a global concurrency limit that does not bind (the
// limit equals the workers), whose throughput must stay ≥ 90%.
const limitsJobs = 50000

// limitsDrain drains jobs on a fresh store like drainOnce, with the task's
// options set by opts.
func (b *bench) limitsDrain(ctx context.Context, name string, jobs, workers int, opts queuemax.TaskOptions, queue ...queuemax.QueueLimits) (time.Duration, cpuPair, error) {
	mod := func(c *queuemax.Config) {
		c.Handlers[0].Options = opts
		if workers > 0 {
			c.Workers = workers
		}
	}
	var (
		h       *harness
		cleanup func()
		err     error
	)
	if b.pg != nil {
		h, _, cleanup, err = b.openPG(ctx, name, workers, mod)
	} else {
		var dir string
		var rm func()
		if dir, rm, err = b.tempDir(name); err != nil {
			return 0, cpuPair{}, err
		}
		if h, err = b.open(ctx, dir, targetShards, workers, mod); err != nil {
			rm()
			return 0, cpuPair{}, err
		}
		cleanup = func() { h.c.Close(); rm() }
	}
	if err != nil {
		return 0, cpuPair{}, err
	}
	defer cleanup()
	for _, l := range queue { // the default queue's global limits
		if err := h.c.SetQueueLimits(ctx, queuemax.DefaultQueue, l); err != nil {
			return 0, cpuPair{}, err
		}
	}
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

// limits compares drains under a global concurrency limit that never
// binds (equal to the workers, and four times that) with the same drain
// without it.
func (b *bench) limits(ctx context.Context) error {
	jobs := b.n(limitsJobs, 400)
	workers := 16
	label := fmt.Sprintf("limits (global concurrency) %d jobs, %dw/%ds", jobs, workers, targetShards)
	if b.pg != nil {
		workers = 10
		label = fmt.Sprintf("pg limits (global concurrency) %d jobs, %dw", jobs, workers)
	}
	var rates [4]float64
	// The last drain limits per key (limit_by) with a key per job, the
	// most keys there can be: every job's key has its own state row.
	for i, opts := range []queuemax.TaskOptions{{}, {GlobalConcurrency: workers}, {GlobalConcurrency: 4 * workers},
		{GlobalConcurrency: workers, LimitBy: "n"}} {
		d, cpu, err := b.limitsDrain(ctx, "limits", jobs, workers, opts)
		if err != nil {
			return err
		}
		rates[i] = rate(jobs, d)
		what := "processing, no global limit"
		if i > 0 {
			what = fmt.Sprintf("processing, global_concurrency=%d", opts.GlobalConcurrency)
		}
		if opts.LimitBy != "" {
			what += " limit_by=" + opts.LimitBy + " (a key per job)"
		}
		b.rep.add(label, what, rates[i], "jobs/s").note("%s", b.cpuText(cpu))
	}
	// A queue limit that does not bind (SetQueueLimits on the jobs' queue).
	d, cpu, err := b.limitsDrain(ctx, "limits", jobs, workers, queuemax.TaskOptions{}, queuemax.QueueLimits{Concurrency: workers})
	if err != nil {
		return err
	}
	qrate := rate(jobs, d)
	b.rep.add(label, fmt.Sprintf("processing, queue limit concurrency=%d", workers), qrate, "jobs/s").note("%s", b.cpuText(cpu))
	b.rep.add(label, "queue limit = workers / none", qrate/rates[0]*100, "%")
	r := b.rep.add(label, "limit = workers / none", rates[1]/rates[0]*100, "%")
	r.target("≥ 90%", r.Value >= 90)
	r = b.rep.add(label, "limit = 4×workers / none", rates[2]/rates[0]*100, "%")
	r.target("≥ 90%", r.Value >= 90)
	b.rep.add(label, "limit per key (limit_by) / none", rates[3]/rates[0]*100, "%")
	return nil
}
