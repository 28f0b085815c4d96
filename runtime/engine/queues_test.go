package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
)

// TestProducer_RunOnceQueueCaps: with Queues, a claim round takes at most
// each queue's free slots (the default queue gets the rest of Workers), a
// round with every queue at its cap claims nothing, and a finished job of
// a capped queue signals Freed and frees its slot for the next round
// (runtime/admission's caps_test.go tests the caps themselves).
func TestProducer_RunOnceQueueCaps(t *testing.T) {
	r := newRig(t, 2)
	release := make(chan struct{})
	r.run = func(ctx context.Context, j *store.Job) (any, error) {
		<-release
		return nil, nil
	}
	var ps []store.InsertParams
	for i := range 20 {
		q := "flood"
		if i%4 == 0 {
			q = ""
		}
		// The flood has the higher priority: without caps it would take
		// every slot.
		prio := store.PriorityHigh
		if q == "" {
			prio = store.PriorityLow
		}
		ps = append(ps, store.InsertParams{Shard: i % 2, Task: "t", Payload: json.RawMessage(`{}`), Priority: prio,
			MaxAttempts: 1, Queue: q, Now: r.now})
	}
	if _, err := r.st.Insert(t.Context(), ps); err != nil {
		t.Fatal(err)
	}
	r.cfg.Queues = map[string]int{"flood": 1, "idle": 1}
	e := r.engine()
	p := newProducer(e)
	if p.ahead(4) {
		t.Errorf("ahead() with Queues = true, want no prefetch")
	}
	byQueue := func() map[string]int {
		m := map[string]int{}
		for range 4 - 2 + 1 { // Workers 4 − flood 1 − idle 1 = default 2, plus flood 1
			j := <-r.ran
			m[j.Queue]++
		}
		return m
	}
	// Run the queued jobs as the workers would, each on its own goroutine
	// (their handlers block until release).
	var running sync.WaitGroup
	startQueued := func() {
		for {
			select {
			case rj := <-e.queue:
				running.Go(func() { e.runJob(rj) })
				continue
			default:
			}
			return
		}
	}
	n, _, err := p.RunOnce(t.Context(), r.now)
	if err != nil || n != 3 {
		t.Fatalf("RunOnce = %d, %v; want 3 jobs (flood 1, default 2; idle has none)", n, err)
	}
	startQueued()
	if got := byQueue(); got["flood"] != 1 || got[store.DefaultQueue] != 2 {
		t.Errorf("first round ran %v, want flood 1 and default 2", got)
	}
	if n, _, err := p.RunOnce(t.Context(), r.now); err != nil || n != 0 {
		t.Errorf("RunOnce at the caps = %d, %v; want nothing claimed", n, err)
	}
	close(release)
	running.Wait()
	e.acks.RunOnce() // the acknowledgements free the slots
	select {
	case <-e.adm.Freed():
	default:
		t.Errorf("Freed not signalled after a capped queue's jobs finished")
	}
	if n, _, err := p.RunOnce(t.Context(), r.now); err != nil || n != 3 {
		t.Errorf("RunOnce after the jobs finished = %d, %v; want 3", n, err)
	}
	startQueued()
	running.Wait()
	e.acks.RunOnce()
	for range 3 {
		<-r.ran
	}
}
