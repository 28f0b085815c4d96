package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/queuemax/queuemax"
)

// The PostgreSQL scenarios: the floor, processing and enqueue.

func (b *bench) pgFloorScenario(ctx context.Context) error {
	f, err := b.pgFloor(ctx, b.n(pgSingleJobs, 200), b.n(pgConcurrentJobs, 400), b.n(pgBatchJobs, 1000), b.n(pgBatchJobs, 1000), 0)
	if err != nil {
		return err
	}
	const name = "pg floor"
	b.rep.add(name, "INSERT, 1 per call", f.Insert1, "rows/s").note("%s", cpuNote(f.Insert1CPU, f.Insert1CPU, b.pg.local))
	b.rep.add(name, fmt.Sprintf("INSERT, 1 per call, %d goroutines", pgProducers), f.Insert16, "rows/s").
		vsFloor(f.Insert1).note("%s", cpuNote(f.Insert16CPU, f.Insert1CPU, b.pg.local))
	b.rep.add(name, "INSERT … unnest, 1,000 per call", f.InsertBatch, "rows/s").note("%s", cpuNote(f.BatchCPU, f.BatchCPU, b.pg.local))
	b.rep.add(name, "COPY, 1,000 per call", f.InsertCopy, "rows/s").note("%s", cpuNote(f.CopyCPU, f.CopyCPU, b.pg.local))
	b.rep.add(name, fmt.Sprintf("claim 100 SKIP LOCKED + DELETE = ANY, %d goroutines, %d jobs", pgFloorClaimers, f.Processed), f.Process, "jobs/s").
		note("%s", cpuNote(f.ProcessCPU, f.ProcessCPU, b.pg.local))
	return nil
}

// pgProcessing processes no-op jobs with the default Config, then with
// pgManyWorkers workers, each against the floor measured right before.
func (b *bench) pgProcessing(ctx context.Context) error {
	jobs := b.n(pgProcessJobs, 500)
	f, err := b.pgFloor(ctx, b.n(pgSingleJobs/10, 50), 0, jobs, 0, 10)
	if err != nil {
		return err
	}
	for _, workers := range []int{0, pgManyWorkers} {
		name := fmt.Sprintf("pg processing (Workers %d)", workers)
		h, _, cleanup, err := b.openPG(ctx, "proc", workers, nil)
		if err != nil {
			return err
		}
		err = func() error {
			defer cleanup()
			ids, enq, err := enqueueBatched(ctx, h.c, jobs, 1000)
			if err != nil {
				return err
			}
			checkIDs(b.rep, name, ids)
			tr := newTracker(ids, jobs)
			m := b.pg.startCPU(ctx, pgApp())
			d, err := h.process(ctx, tr, nil)
			if err != nil {
				return err
			}
			var cpu cpuPair
			cpu.Client, cpu.Server = m.stop(ctx, jobs)
			tr.check(b.rep, name, once)
			checkStore(ctx, b.rep, name, h.c, 0, int64(jobs), 0)
			w := "default Config (10 workers)"
			if workers > 0 {
				w = fmt.Sprintf("%d workers", workers)
			}
			label := fmt.Sprintf("pg processing %d jobs, %s", jobs, w)
			if workers == 0 {
				b.rep.add(label, "enqueue, batches of 1,000 (setup)", rate(jobs, enq), "jobs/s").vsFloor(f.InsertBatch)
			}
			r := b.rep.add(label, "processing", rate(jobs, d), "jobs/s").vsFloor(f.Process)
			r.target("≥ 50% of floor", r.Ratio >= 0.5)
			r.note("%s", cpuNote(cpu, f.ProcessCPU, b.pg.local))
			if workers == 0 {
				r.Note += fmt.Sprintf("; floor with claims of %d (= Workers, no prefetch): %s jobs/s (%.0f%% of floor)",
					f.SmallBatch, fmtNum(f.ProcessSmall), 100*f.ProcessSmall/f.Process)
			}
			b.addCPU(label, "processing", cpu, f.ProcessCPU)
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// pgEnqueue measures enqueue one call at a time, from pgProducers
// goroutines, and in batches of 1,000, each on a fresh schema.
func (b *bench) pgEnqueue(ctx context.Context) error {
	n1, n16, nb := b.n(pgSingleJobs, 200), b.n(pgConcurrentJobs, 400), b.n(pgBatchJobs, 1000)
	f, err := b.pgFloor(ctx, n1, n16, nb, nb, 0)
	if err != nil {
		return err
	}
	runs := []struct {
		metric string
		jobs   int
		do     func(c *queuemax.Client, n int) ([]queuemax.JobID, time.Duration, error)
		floor  float64
		cpu    cpuPair
		goal   string
		met    func(ratio float64) bool
		extra  string
	}{
		{"enqueue, 1 call at a time", n1, func(c *queuemax.Client, n int) ([]queuemax.JobID, time.Duration, error) {
			return enqueueSingle(ctx, c, n, 1)
		}, f.Insert1, f.Insert1CPU, "≥ 80% of floor", func(r float64) bool { return r >= 0.8 }, ""},
		{fmt.Sprintf("enqueue, %d goroutines × 1 call", pgProducers), n16, func(c *queuemax.Client, n int) ([]queuemax.JobID, time.Duration, error) {
			return enqueueSingle(ctx, c, n, pgProducers)
		}, f.Insert1, f.Insert1CPU, "> floor (1 per call)", func(r float64) bool { return r > 1 },
			fmt.Sprintf("; the floor from %d goroutines: %s rows/s", pgProducers, fmtNum(f.Insert16))},
		{"enqueue, batches of 1,000", nb, func(c *queuemax.Client, n int) ([]queuemax.JobID, time.Duration, error) {
			return enqueueBatched(ctx, c, n, 1000)
		}, f.InsertCopy, f.CopyCPU, "≥ 50% of the COPY floor", func(r float64) bool { return r >= 0.5 },
			fmt.Sprintf("; floor INSERT … unnest: %s rows/s", fmtNum(f.InsertBatch))},
	}
	var batchRate float64
	for _, r := range runs {
		name := "pg enqueue"
		h, _, cleanup, err := b.openPG(ctx, "enq", 0, nil)
		if err != nil {
			return err
		}
		err = func() error {
			defer cleanup()
			m := b.pg.startCPU(ctx, pgApp())
			ids, d, err := r.do(h.c, r.jobs)
			if err != nil {
				return err
			}
			var cpu cpuPair
			cpu.Client, cpu.Server = m.stop(ctx, r.jobs)
			checkIDs(b.rep, name, ids)
			checkStore(ctx, b.rep, name, h.c, int64(r.jobs), 0, 0)
			label := fmt.Sprintf("%s %d jobs", name, r.jobs)
			res := b.rep.add(label, r.metric, rate(r.jobs, d), "jobs/s").vsFloor(r.floor)
			if r.met != nil {
				res.target(r.goal, r.met(res.Ratio))
			}
			res.note("%s%s", cpuNote(cpu, r.cpu, b.pg.local), r.extra)
			if r.jobs == nb && r.metric == runs[2].metric {
				batchRate = res.Value
			}
			b.addCPU(label, r.metric, cpu, r.cpu)
			if r.jobs == n1 && r.metric == runs[0].metric {
				// Issue 13: one call at a time costs ≤ 20µs of client CPU.
				last := &b.rep.Results[len(b.rep.Results)-1]
				if b.pg.local {
					last = &b.rep.Results[len(b.rep.Results)-2]
				}
				last.target("≤ 20 µs", last.Value <= 20)
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	// The peer: River's InsertMany, same batches, same server, same run.
	river, version, err := b.pgRiver(ctx, nb)
	label := fmt.Sprintf("pg enqueue %d jobs", nb)
	if err != nil {
		fmt.Fprintf(os.Stderr, "queuemax-bench: River's InsertMany not measured: %v\n", err)
		return nil
	}
	b.rep.add(label, "River "+version+" InsertMany, batches of 1,000", river, "jobs/s")
	r := b.rep.add(label, "enqueue, batches of 1,000 ÷ River's InsertMany", batchRate/river, "×")
	r.target("≥ 1.5×", r.Value >= 1.5)
	return nil
}

// pgRiver runs the riverpeer module beside this file (River's InsertMany
// of jobs no-op jobs, 1,000 per call, on a fresh schema of the same
// server) and returns its rate and River's version.
func (b *bench) pgRiver(ctx context.Context, jobs int) (float64, string, error) {
	return b.pgRiverRun(ctx, jobs)
}

// pgRiverRun is pgRiver with riverpeer's extra flags (-fast: InsertManyFast).
func (b *bench) pgRiverRun(ctx context.Context, jobs int, flags ...string) (float64, string, error) {
	dir := "cmd/queuemax-bench/riverpeer"
	if _, file, _, ok := runtime.Caller(0); ok {
		if d := filepath.Join(filepath.Dir(file), "riverpeer"); dirExists(d) {
			dir = d
		}
	}
	if !dirExists(dir) {
		return 0, "", fmt.Errorf("no riverpeer module at %s (run from the repository's root)", dir)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"run", ".", "-dsn", b.o.dsn, "-jobs", strconv.Itoa(jobs), "-batch", "1000"}, flags...)...)
	cmd.Dir = dir
	// riverpeer runs as a module on its own (it requires no sibling).
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, "", fmt.Errorf("go run %s: %w", dir, err)
	}
	var res struct {
		River      string  `json:"river"`
		InsertMany float64 `json:"insert_many"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.InsertMany <= 0 {
		return 0, "", fmt.Errorf("riverpeer printed %q: %v", out, err)
	}
	return res.InsertMany, res.River, nil
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}
