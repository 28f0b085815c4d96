package engine

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/enqueue"
	"github.com/queuemax/queuemax/runtime/store"
)

// countingBacklog counts TaskBacklog reads.
type countingBacklog struct {
	store.Store
	reads atomic.Int64
}

func (s *countingBacklog) TaskBacklog(ctx context.Context) (map[string]store.TaskBacklog, error) {
	s.reads.Add(1)
	return s.Store.TaskBacklog(ctx)
}

// TestTasks_OneBacklogRead: Run's start adopts the jobs stored under a
// task's earlier name and warns of the tasks nobody runs from one read
// of the task backlog (the scan of every waiting job), re-read only
// because the adoption renamed jobs, so that the warning names the
// unhandled task and not the adopted name; maintenance's first round,
// at the same moment, reads nothing, and each later round reads once.
func TestTasks_OneBacklogRead(t *testing.T) {
	r := newRig(t, 1)
	r.enqueue("example.com/shop/tasks.Send", 1, 3) // stored before the package moved
	r.enqueue("nobody", 1, 2)
	st := &countingBacklog{Store: r.st}
	var logs bytes.Buffer // the test's goroutine alone logs: the engine does not run
	log := slog.New(slog.NewTextHandler(&logs, nil))
	r.cfg.Store = st
	r.cfg.Renames = enqueue.NewRenames(map[string][]string{"tasks.Send": nil})
	r.cfg.Registry = &Registry{Store: st, Key: "w1#1", Every: time.Second, TTL: time.Minute,
		Now: func() time.Time { return r.now }, Log: log,
		Info: WorkerInfo{ID: "w1", Tasks: []string{"tasks.Send"}}}
	r.cfg.Log = log
	e := r.engine()
	ctx := t.Context()

	e.tasks(ctx)
	if got := st.reads.Load(); got != 2 {
		t.Errorf("Run's start read the task backlog %d times; want 2 (once, and again after renaming jobs)", got)
	}
	backlog, err := r.st.TaskBacklog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if backlog["tasks.Send"].Pending != 3 || backlog["example.com/shop/tasks.Send"].Pending != 0 {
		t.Errorf("backlog after the start %v; want the 3 jobs adopted as tasks.Send", backlog)
	}
	out := logs.String()
	if !strings.Contains(out, "task=nobody") || strings.Contains(out, "task=example.com/shop/tasks.Send") {
		t.Errorf("warnings %q; want one for nobody and none for the adopted name", out)
	}

	m := &maintenance{e: e}
	m.RunOnce(ctx, r.now)
	if got := st.reads.Load(); got != 2 {
		t.Errorf("maintenance's first round read the task backlog (%d reads in all); Run's start just did", got)
	}
	m.RunOnce(ctx, r.now.Add(time.Second))
	if got := st.reads.Load(); got != 3 {
		t.Errorf("maintenance's second round: %d reads in all, want 3 (one for both uses)", got)
	}
}
