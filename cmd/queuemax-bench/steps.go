package main

import (
	"context"
	"fmt"
	"time"

	"github.com/queuemax/queuemax"
)

// The job steps scenario (both stores, issue 33): what a step's write
// costs. The same no-op jobs are drained twice by one client with the
// default Config: plain, then with a handler that runs one job step
// (queuemax.Do) recording stepsCursors cursors (queuemax.SetCursor) before
// it completes: one read of the job's progress and stepsCursors+1 fenced
// writes per job. The difference in CPU per job, divided by the writes, is
// the CPU of one step write (this process, and the server's on a local
// PostgreSQL); a job that uses no step pays nothing of it.
const (
	stepsJobs    = 5000
	stepsCursors = 4
)

func (b *bench) steps(ctx context.Context) error {
	n := b.n(stepsJobs, 200)
	var per [2]time.Duration
	var cpu [2]cpuPair
	var label string
	for k, withSteps := range []bool{false, true} {
		var h *harness
		mod := func(cfg *queuemax.Config) {
			if !withSteps {
				return
			}
			cfg.Handlers = []queuemax.Handler{{Name: taskNoop, Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
				if _, err := h.tr.Load().handle(ctx, j); err != nil {
					return nil, err
				}
				return nil, queuemax.Do(ctx, "work", func(ctx context.Context) error {
					for i := range stepsCursors {
						if err := queuemax.SetCursor(ctx, i); err != nil {
							return err
						}
					}
					return nil
				})
			}}}
		}
		hh, prefix, cleanup, err := b.openStore(ctx, "steps", targetShards, 0, mod)
		if err != nil {
			return err
		}
		h = hh
		label = prefix + "steps of jobs (queuemax.Do, SetCursor), default Config"
		err = func() error {
			defer cleanup()
			ids, _, err := enqueueBatched(ctx, h.c, n, 1000)
			if err != nil {
				return err
			}
			tr := newTracker(ids, n)
			m := b.startCPUMeter(ctx)
			d, err := h.process(ctx, tr, nil)
			if err != nil {
				return err
			}
			cpu[k] = m.stop(ctx, n)
			per[k] = d / time.Duration(n)
			tr.check(b.rep, label, once)
			return nil
		}()
		if err != nil {
			return err
		}
	}
	writes := time.Duration(stepsCursors + 1)
	b.rep.add(label, fmt.Sprintf("%d plain jobs: time per job", n), us(per[0]), "µs").note("%s", b.cpuText(cpu[0]))
	b.rep.add(label, fmt.Sprintf("%d jobs of 1 step, %d cursors (1 read, %d writes): time per job", n, stepsCursors, writes), us(per[1]), "µs").
		vsFloor(us(per[0])).note("%s", b.cpuText(cpu[1]))
	w := cpuPair{Client: (cpu[1].Client - cpu[0].Client) / writes, Server: (cpu[1].Server - cpu[0].Server) / writes}
	b.rep.add(label, "one step write (the CPU above, over the writes)", us(w.Client), "µs CPU").note("%s", b.cpuText(w))
	return nil
}
