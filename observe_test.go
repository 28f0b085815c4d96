package queuemax

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
)

// countingStore counts JobCounts calls and refuses TaskCounts, so a test
// sees that CountsByTask (the dashboard's task table) is the one-pass count.
type countingStore struct {
	store.Store
	jobCounts atomic.Int64
}

func (s *countingStore) JobCounts(ctx context.Context) ([]store.JobCount, error) {
	s.jobCounts.Add(1)
	return s.Store.JobCounts(ctx)
}

func (s *countingStore) TaskCounts(context.Context, string) (map[store.Status]int64, error) {
	return nil, errors.New("TaskCounts called: the task table must use JobCounts")
}

// TestCountsByTask_OnePass: CountsByTask is one JobCounts pass over the
// store, dead-letter rows included, never a TaskCounts per task.
func TestCountsByTask_OnePass(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 2, Handlers: []Handler{{Name: "test.fail", Func: func(context.Context, *Job) (any, error) { return nil, nil }}}})
	if _, err := b.c.Enqueue(b.ctx, "test.fail", map[string]int{"n": 1}, Opts{}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.c.Claim(b.ctx, "w1", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	if _, err := b.c.Fail(b.ctx, jobs[0], Permanent(errors.New("boom"))); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: b.c.st}
	b.c.st = cs
	rows, err := b.c.CountsByTask(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var failed, dead int64
	for _, r := range rows {
		switch {
		case r.IsDeadLetters():
			dead += r.Count
		case r.Status == StatusFailed:
			failed += r.Count
		}
	}
	if failed != 1 || dead != 1 {
		t.Errorf("CountsByTask = %+v; want 1 failed job and 1 dead letter", rows)
	}
	if n := cs.jobCounts.Load(); n != 1 {
		t.Errorf("JobCounts called %d times, want 1", n)
	}
}

// TestObserve_TasksAndBreakers: Tasks lists the handlers' tasks sorted;
// Breakers is empty and false before Run, then one closed breaker per task
// with the configured threshold, in Run's order.
func TestObserve_TasksAndBreakers(t *testing.T) {
	t.Parallel()
	nop := func(context.Context, *Job) (any, error) { return nil, nil }
	b := setup(t, Config{Shards: 1, CircuitThreshold: 7, Handlers: []Handler{{Name: "t.b", Func: nop}, {Name: "t.a", Func: nop}}})
	if got := b.c.Tasks(); len(got) != 2 || got[0] != "t.a" || got[1] != "t.b" {
		t.Errorf("Tasks = %v, want [t.a t.b]", got)
	}
	if bs, ok := b.c.Breakers(); ok || len(bs) != 0 {
		t.Errorf("Breakers before Run = %v, %v; want none, false", bs, ok)
	}
	if b.c.Logger() == nil {
		t.Error("Logger = nil")
	}
	run(t, b.c)
	waitFor(t, "Run's breakers", func() bool { _, ok := b.c.Breakers(); return ok })
	bs, _ := b.c.Breakers()
	names := map[string]bool{}
	for _, br := range bs {
		names[br.Task] = true
		if br.Stats.State != CircuitClosed || br.Stats.Threshold != 7 {
			t.Errorf("breaker %q = %+v; want closed with threshold 7", br.Task, br.Stats)
		}
	}
	if !names["t.a"] || !names["t.b"] {
		t.Errorf("Breakers = %+v; want one per task", bs)
	}
	ss, err := b.c.ShardStats(b.ctx)
	if err != nil || len(ss) != 1 || !ss[0].Healthy {
		t.Errorf("ShardStats = %+v, %v; want one healthy shard", ss, err)
	}
}
