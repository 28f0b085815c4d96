package main

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax"
)

// The workflow scenario (both stores): what a workflow costs over plain
// jobs.
//
//   - Enqueue: a workflow of 10 independent steps against EnqueueMany of
//     10 jobs, one call at a time (target ≥ 70% of its rate).
//   - Completion: 2N no-op jobs processed as N two-step workflows (a → b,
//     so every completion of a releases b, and every completion of b ends
//     its workflow) against 2N plain jobs: the time per job, and the CPU
//     per job, which the shared machine disturbs least (target ≤ 1.5× a
//     plain job's CPU on SQLite, ≤ 2× its server CPU on PostgreSQL).
const (
	wfEnqueueRounds = 2000 // calls of 10 jobs each
	wfChains        = 5000 // two-step workflows (10,000 jobs)
	wfSteps         = 10
)

func (b *bench) workflow(ctx context.Context) error {
	rounds := b.n(wfEnqueueRounds, 50)
	var rates [2]float64
	var cpus [2]time.Duration
	for k, wf := range []bool{false, true} {
		h, prefix, cleanup, err := b.openStore(ctx, "wfenqueue", targetShards, scaleWorkers, nil)
		if err != nil {
			return err
		}
		cpu0 := cpuTime()
		start := time.Now()
		for i := range rounds {
			if wf {
				w := queuemax.NewWorkflow("bench")
				for s := range wfSteps {
					w.Add(fmt.Sprintf("s%d", s), taskNoop, noopArgs{N: i*wfSteps + s})
				}
				_, err = h.c.EnqueueWorkflow(ctx, w)
			} else {
				_, err = h.c.EnqueueMany(ctx, noopJobs(i*wfSteps, wfSteps))
			}
			if err != nil {
				break
			}
		}
		d := time.Since(start)
		cpus[k] = (cpuTime() - cpu0) / time.Duration(rounds*wfSteps)
		rates[k] = rate(rounds*wfSteps, d)
		if err == nil {
			checkStore(ctx, b.rep, prefix+"workflow", h.c, int64(rounds*wfSteps), 0, 0)
		}
		cleanup()
		if err != nil {
			return err
		}
		if k == 1 {
			label := prefix + "workflow enqueue, 1 call at a time"
			b.rep.add(label, fmt.Sprintf("EnqueueMany of %d jobs", wfSteps), rates[0], "jobs/s").
				note("CPU per job %.1fµs (this process)", us(cpus[0]))
			r := b.rep.add(label, fmt.Sprintf("EnqueueWorkflow of %d independent steps", wfSteps), rates[1], "jobs/s").vsFloor(rates[0])
			r.target("≥ 70% of EnqueueMany", r.Ratio >= 0.7).note("CPU per job %.1fµs (this process)", us(cpus[1]))
		}
	}
	chains := b.n(wfChains, 100)
	var per [2]time.Duration
	var cpu [2]cpuPair
	var label string
	for k, wf := range []bool{false, true} {
		h, prefix, cleanup, err := b.openStore(ctx, "wfcomplete", targetShards, 0, nil)
		if err != nil {
			return err
		}
		label = prefix + "workflow completion, default Config"
		err = func() error {
			defer cleanup()
			var ids []queuemax.JobID
			if wf {
				for i := range chains {
					w := queuemax.NewWorkflow("bench")
					w.Add("a", taskNoop, noopArgs{N: 2 * i})
					w.Add("b", taskNoop, noopArgs{N: 2*i + 1}, queuemax.After("a"))
					id, err := h.c.EnqueueWorkflow(ctx, w)
					if err != nil {
						return err
					}
					info, err := h.c.Workflow(ctx, id)
					if err != nil {
						return err
					}
					for _, s := range info.Steps {
						ids = append(ids, s.JobID)
					}
				}
			} else {
				var err error
				if ids, _, err = enqueueBatched(ctx, h.c, 2*chains, 1000); err != nil {
					return err
				}
			}
			tr := newTracker(ids, 2*chains)
			m := b.startCPUMeter(ctx)
			d, err := h.process(ctx, tr, nil)
			if err != nil {
				return err
			}
			cpu[k] = m.stop(ctx, 2*chains)
			per[k] = d / time.Duration(2*chains)
			tr.check(b.rep, label, once)
			if wf {
				st, err := h.c.Stats(ctx)
				if err != nil {
					return err
				}
				if st.Workflows.Completed != int64(chains) {
					b.rep.fail("%s: %d workflows completed, want %d", label, st.Workflows.Completed, chains)
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	b.rep.add(label, fmt.Sprintf("%d plain jobs: time per job", 2*chains), us(per[0]), "µs").note("%s", b.cpuText(cpu[0]))
	b.rep.add(label, fmt.Sprintf("%d two-step workflows (a → b): time per job", chains), us(per[1]), "µs").vsFloor(us(per[0])).
		note("%s", b.cpuText(cpu[1]))
	// The CPU ratio: this process's on SQLite, the server's on a local
	// PostgreSQL (the client's otherwise).
	plain, steps, what, limit := cpu[0].Client, cpu[1].Client, "CPU", 1.5
	if b.pg != nil {
		limit = 2
		if b.pg.local {
			plain, steps, what = cpu[0].Server, cpu[1].Server, "server CPU"
		}
	}
	b.rep.add(label, fmt.Sprintf("%d plain jobs: %s per job", 2*chains, what), us(plain), "µs")
	r := b.rep.add(label, fmt.Sprintf("%d two-step workflows: %s per job", chains, what), us(steps), "µs").vsFloor(us(plain))
	r.target(fmt.Sprintf("≤ %g× a plain job's %s", limit, what), r.Ratio <= limit)
	return b.workflowAck(ctx, chains)
}

// workflowAck measures the acknowledgement alone: jobs claimed with
// Client.Claim are completed with Client.Complete by wfAckers goroutines
// (grouped into shared transactions), first plain jobs, then steps that
// each release a waiting dependent.
func (b *bench) workflowAck(ctx context.Context, n int) error {
	const wfAckers = 16
	var per [2]time.Duration
	var cpu [2]cpuPair
	var label string
	for k, wf := range []bool{false, true} {
		h, prefix, cleanup, err := b.openStore(ctx, "wfack", targetShards, 0, nil)
		if err != nil {
			return err
		}
		label = prefix + "workflow acknowledgement (Client.Complete)"
		err = func() error {
			defer cleanup()
			if wf {
				for i := range n {
					w := queuemax.NewWorkflow("bench")
					w.Add("a", taskNoop, noopArgs{N: 2 * i})
					w.Add("b", taskNoop, noopArgs{N: 2*i + 1}, queuemax.After("a"))
					if _, err := h.c.EnqueueWorkflow(ctx, w); err != nil {
						return err
					}
				}
			} else if _, _, err := enqueueBatched(ctx, h.c, n, 1000); err != nil {
				return err
			}
			var jobs []*queuemax.Job
			for len(jobs) < n {
				got, err := h.c.Claim(ctx, "bench", 1000)
				if err != nil {
					return err
				}
				if len(got) == 0 {
					return fmt.Errorf("claimed %d of %d jobs", len(jobs), n)
				}
				jobs = append(jobs, got...)
			}
			m := b.startCPUMeter(ctx)
			start := time.Now()
			errc := make(chan error, wfAckers)
			next := make(chan *queuemax.Job, len(jobs))
			for _, j := range jobs {
				next <- j
			}
			close(next)
			for range wfAckers {
				go func() {
					for j := range next {
						if err := h.c.Complete(ctx, j, nil); err != nil {
							errc <- err
							return
						}
					}
					errc <- nil
				}()
			}
			for range wfAckers {
				if err := <-errc; err != nil {
					return err
				}
			}
			per[k] = time.Since(start) / time.Duration(n)
			cpu[k] = m.stop(ctx, n)
			if wf {
				st, err := h.c.Stats(ctx)
				if err != nil {
					return err
				}
				if st.Pending != int64(n) {
					b.rep.fail("%s: %d steps released, want %d", label, st.Pending, n)
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	b.rep.add(label, fmt.Sprintf("%d plain jobs, %d goroutines: time per job", n, wfAckers), us(per[0]), "µs").note("%s", b.cpuText(cpu[0]))
	r := b.rep.add(label, fmt.Sprintf("%d steps each releasing one: time per job", n), us(per[1]), "µs").vsFloor(us(per[0]))
	r.target("≤ +20% over plain jobs", r.Ratio <= 1.2).note("%s", b.cpuText(cpu[1]))
	return nil
}
