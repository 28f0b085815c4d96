package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// insertN stores n jobs of task (payloads {"i":0}, {"i":1}, ...) in one
// call and returns their IDs.
func (l *live) insertN(task string, n int) []store.JobID {
	l.t.Helper()
	ps := make([]store.InsertParams, n)
	for i := range ps {
		ps[i] = store.InsertParams{Task: task, Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), MaxAttempts: 1, Now: time.Now().UTC()}
	}
	ids, err := l.st.Insert(l.t.Context(), ps)
	if err != nil {
		l.t.Fatal(err)
	}
	return ids
}

// stats sums the store's counts over the shards.
func (l *live) stats() (s store.ShardStats) {
	l.t.Helper()
	ss, err := l.st.Stats(l.t.Context())
	if err != nil {
		l.t.Fatal(err)
	}
	for _, x := range ss {
		s.Pending += x.Pending
		s.Processing += x.Processing
		s.TotalProcessed += x.TotalProcessed
	}
	return s
}

// TestRun_PrefetchRunsEachJobOnceWithinWorkers: with ClaimBatch above
// Workers, claims take whole batches, at most Workers handlers run at
// once, and every job runs exactly once.
func TestRun_PrefetchRunsEachJobOnceWithinWorkers(t *testing.T) {
	t.Parallel()
	var (
		mu              sync.Mutex
		runs            = map[store.JobID]int{}
		running, maxRun atomic.Int64
	)
	l := newLive(t, map[string]*Handler{"t.Count": handle(func(_ context.Context, j *store.Job) (any, error) {
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
	})})
	l.cfg.Workers, l.cfg.ClaimBatch = 3, 50
	const jobs = 400
	ids := l.insertN("t.Count", jobs)
	l.start()
	l.wait(jobs, queuemaxtype.EventCompleted)
	l.stop()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("job %d ran %d times, want 1", id, runs[id])
		}
	}
	if got := maxRun.Load(); got > 3 {
		t.Errorf("%d handlers ran at once, want at most Workers (3)", got)
	}
	if s := l.stats(); s.TotalProcessed != jobs || s.Pending+s.Processing != 0 {
		t.Errorf("stats = %d processed, %d pending, %d processing; want %d, 0, 0", s.TotalProcessed, s.Pending, s.Processing, jobs)
	}
}

// TestRun_StopReturnsPrefetchedJobsUnspent: jobs claimed with a running
// one and still waiting for a worker when Run stops go back to pending
// without spending an attempt.
func TestRun_StopReturnsPrefetchedJobsUnspent(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 10)
	block := make(chan struct{})
	l := newLive(t, map[string]*Handler{"t.Block": handle(func(ctx context.Context, _ *store.Job) (any, error) {
		started <- struct{}{}
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil, nil
	})})
	l.cfg.Workers, l.cfg.ClaimBatch = 1, 10
	l.insertN("t.Block", 5)
	l.start()
	<-started // one job runs; the other four were claimed with it and wait
	if s := l.stats(); s.Processing != 5 {
		t.Errorf("stats while running: %d processing, want 5 (one batch claimed)", s.Processing)
	}
	close(block)
	l.stop()
	jobs, err := l.st.Jobs(t.Context(), store.ListParams{Status: store.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	if s := l.stats(); s.Processing != 0 || int64(len(jobs))+s.TotalProcessed != 5 {
		t.Errorf("after Stop: %d pending, %d processed, %d processing; want 5 in all, 0 processing", len(jobs), s.TotalProcessed, s.Processing)
	}
	for _, j := range jobs {
		if j.Attempts != 0 {
			t.Errorf("job %d was returned with %d attempts spent, want 0", j.ID, j.Attempts)
		}
	}
}
