package queuemax

import (
	"context"
	"errors"
	"testing"
)

// TestClient_RunAckBatch covers the acknowledgements of the jobs one claim
// started at once: they commit together, a slow job of the batch does not
// hold back the others' acknowledgements, and a failing job of the batch
// is recorded on its own.
func TestClient_RunAckBatch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hs := []Handler{
		{Name: "t.Ok", Func: func(context.Context, *Job) (any, error) { return map[string]int{"ok": 1}, nil }},
		{Name: "t.Bad", Func: func(context.Context, *Job) (any, error) { return nil, Permanent(errors.New("bad")) }},
		{Name: "t.Slow", Func: func(ctx context.Context, _ *Job) (any, error) {
			select {
			case <-release:
				return nil, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}},
	}
	b := setup(t, Config{Shards: 1, Workers: 8, Handlers: hs})
	ps := []EnqueueParams{{Task: "t.Slow", Payload: echoArgs{0}}, {Task: "t.Bad", Payload: echoArgs{1}}}
	for i := range 6 {
		ps = append(ps, EnqueueParams{Task: "t.Ok", Payload: echoArgs{i}})
	}
	if _, err := b.c.EnqueueMany(b.ctx, ps); err != nil {
		t.Fatal(err)
	}
	done := collect(b.c, EventCompleted)
	failed := collect(b.c, EventFailed)
	stop := run(t, b.c)
	// The slow job is still running: the others' acknowledgements must
	// commit anyway.
	for _, ev := range waitEvents(t, done, 6) {
		if ev.Task != "t.Ok" {
			t.Errorf("completed %q before the slow job was released", ev.Task)
		}
	}
	waitEvents(t, failed, 1)
	close(release)
	if ev := waitEvents(t, done, 1); ev[0].Task != "t.Slow" {
		t.Errorf("completed %q, want t.Slow", ev[0].Task)
	}
	stop()
	s, err := b.c.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.TotalProcessed != 7 || s.TotalFailed != 1 || s.Pending != 0 || s.Processing != 0 {
		t.Errorf("stats: processed %d, failed %d, pending %d, processing %d; want 7, 1, 0, 0",
			s.TotalProcessed, s.TotalFailed, s.Pending, s.Processing)
	}
	ws, _ := b.c.WorkerStats()
	if ws.Processed != 7 || ws.Failed != 1 || ws.LeaseLost != 0 {
		t.Errorf("worker stats: processed %d, failed %d, lease lost %d; want 7, 1, 0", ws.Processed, ws.Failed, ws.LeaseLost)
	}
}
