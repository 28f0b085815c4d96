package queuemax

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// TestClient_RunPrefetch covers ClaimBatch above Workers: claims take whole
// batches, at most Workers handlers run at once, every job runs exactly
// once, and jobs still waiting for a worker when Run stops go back to
// pending without spending an attempt.
func TestClient_RunPrefetch(t *testing.T) {
	t.Parallel()

	t.Run("RunsEachJobOnceWithinWorkers", func(t *testing.T) {
		t.Parallel()
		var (
			mu              sync.Mutex
			runs            = map[JobID]int{}
			running, maxRun atomic.Int64
		)
		h := Handler{Name: "t.Count", Func: func(_ context.Context, j *Job) (any, error) {
			n := running.Add(1)
			for {
				m := maxRun.Load()
				if n <= m || maxRun.CompareAndSwap(m, n) {
					break
				}
			}
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			running.Add(-1)
			return nil, nil
		}}
		b := setup(t, Config{Shards: 2, Workers: 3, ClaimBatch: 50, Handlers: []Handler{h}})
		const jobs = 400
		ps := make([]EnqueueParams, jobs)
		for i := range ps {
			ps[i] = EnqueueParams{Task: "t.Count", Payload: echoArgs{i}}
		}
		ids, err := b.c.EnqueueMany(b.ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		done := collect(b.c, EventCompleted)
		stop := run(t, b.c)
		waitEvents(t, done, jobs)
		stop()
		for _, id := range ids {
			if runs[id] != 1 {
				t.Errorf("job %d ran %d times, want 1", id, runs[id])
			}
		}
		if got := maxRun.Load(); got > 3 {
			t.Errorf("%d handlers ran at once, want at most Workers (3)", got)
		}
		s, err := b.c.Stats(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.TotalProcessed != jobs || s.Pending+s.Processing != 0 {
			t.Errorf("Stats = %d processed, %d pending, %d processing; want %d, 0, 0", s.TotalProcessed, s.Pending, s.Processing, jobs)
		}
	})

	t.Run("StopReturnsWaitingJobsUnspent", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{}, 10)
		block := make(chan struct{})
		h := Handler{Name: "t.Block", Func: func(ctx context.Context, _ *Job) (any, error) {
			started <- struct{}{}
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil, nil
		}}
		b := setup(t, Config{Shards: 1, Workers: 1, ClaimBatch: 10, Handlers: []Handler{h}})
		ps := make([]EnqueueParams, 5)
		for i := range ps {
			ps[i] = EnqueueParams{Task: "t.Block", Payload: echoArgs{i}}
		}
		if _, err := b.c.EnqueueMany(b.ctx, ps); err != nil {
			t.Fatal(err)
		}
		stop := run(t, b.c)
		<-started // one job runs; the other four were claimed with it and wait
		if s, err := b.c.Stats(b.ctx); err != nil || s.Processing != 5 {
			t.Errorf("Stats while running: %d processing (err %v), want 5 (one batch claimed)", s.Processing, err)
		}
		close(block)
		stop()
		jobs, err := b.c.Jobs(b.ctx, ListParams{Status: StatusPending})
		if err != nil {
			t.Fatal(err)
		}
		s, err := b.c.Stats(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Processing != 0 || int64(len(jobs))+s.TotalProcessed != 5 {
			t.Errorf("after Stop: %d pending, %d processed, %d processing; want 5 in all, 0 processing", len(jobs), s.TotalProcessed, s.Processing)
		}
		for _, j := range jobs {
			if j.Attempts != 0 {
				t.Errorf("job %d was returned with %d attempts spent, want 0", j.ID, j.Attempts)
			}
		}
	})
}
