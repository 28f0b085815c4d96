package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

// The failure, scale and depth scenarios.

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
