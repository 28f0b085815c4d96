package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
)

// breakerRow reads the stored breaker of the rig's catch-all handler.
func (r *rig) breakerRow() store.BreakerRow {
	r.t.Helper()
	rows, err := r.st.BreakerList(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, b := range rows {
		if b.Task == "" {
			return b
		}
	}
	return store.BreakerRow{State: store.BreakerClosed}
}

// TestBreakers_BadInputDoesNotOpen is issue 23's story: jobs that fail on
// their own input (plain errors, Permanent) never open the breaker, and a
// good job enqueued after them runs in the next round.
func TestBreakers_BadInputDoesNotOpen(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Workers, r.cfg.ClaimBatch = 1, 1
	r.run = func(_ context.Context, j *store.Job) (any, error) {
		if string(j.Payload) == `{"bad":1}` {
			return nil, fmt.Errorf("fetch: unsupported scheme in %q", "http://example.com")
		}
		if string(j.Payload) == `{"bad":2}` {
			return nil, queuemaxtype.Permanent(errors.New("payload: url missing"))
		}
		return nil, nil
	}
	for _, p := range []string{`{"bad":1}`, `{"bad":2}`, `{"bad":1}`} {
		if _, err := r.st.Insert(t.Context(), []store.InsertParams{{Task: "t", Payload: []byte(p), MaxAttempts: 3, Now: r.now}}); err != nil {
			t.Fatal(err)
		}
	}
	e := r.engine()
	p := newProducer(e)
	for range 3 {
		if n, _, err := p.RunOnce(t.Context(), r.now); err != nil || n != 1 {
			t.Fatalf("RunOnce = %d, %v; want one bad job", n, err)
		}
		settle(e, -1)
	}
	if b := r.breakerRow(); !b.Closed() || b.Failures != 0 {
		t.Fatalf("breaker after 3 bad-input failures = %+v; want closed with 0 failures (threshold 2)", b)
	}
	r.enqueue("t", 0, 1)
	if n, _, _ := p.RunOnce(t.Context(), r.now); n != 1 {
		t.Fatalf("good job: claimed %d, want 1 at once", n)
	}
	settle(e, -1)
	if s := e.Stats(); s.Processed != 1 {
		t.Errorf("processed %d, want the good job", s.Processed)
	}
}

// TestBreakers_DependencyFailuresOpenThenProbe: counted failures open the
// stored breaker at the threshold; while open nothing is claimed; after
// the timeout one probe runs, taking the job that never ran rather than
// one that failed on its own input (of higher priority, and due); a
// successful probe closes the breaker.
func TestBreakers_DependencyFailuresOpenThenProbe(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Workers, r.cfg.ClaimBatch = 1, 1
	down := true
	r.run = func(_ context.Context, j *store.Job) (any, error) {
		switch {
		case string(j.Payload) == `{"bad":true}`:
			return nil, errors.New("bad input")
		case string(j.Payload) == `{"fresh":true}`:
			return nil, nil
		case down:
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		return nil, nil
	}
	e := r.engine()
	p := newProducer(e)
	if _, err := r.st.Insert(t.Context(), []store.InsertParams{{Task: "t", Payload: []byte(`{"bad":true}`), Priority: 2, MaxAttempts: 5, Now: r.now}}); err != nil {
		t.Fatal(err)
	}
	r.enqueue("t", 1, 2)
	for range 3 {
		if n, _, _ := p.RunOnce(t.Context(), r.now); n != 1 {
			t.Fatalf("claimed %d, want 1", n)
		}
		settle(e, -1)
	}
	b := r.breakerRow()
	if b.State != store.BreakerOpen || b.Failures != 2 || !b.Until.Equal(r.now.Add(time.Minute)) {
		t.Fatalf("breaker after a bad input and 2 refused connections = %+v; want open until now+1m with 2 failures", b)
	}
	bs, _ := e.BreakerStats()
	if got := bs[""]; got.State.String() != "open" || got.Failures != 2 || got.StateChanges != 1 {
		t.Errorf("the engine's breaker stats read %v with %d failures after %d changes, want open with 2 after 1", got.State, got.Failures, got.StateChanges)
	}
	if _, err := r.st.Insert(t.Context(), []store.InsertParams{{Task: "t", Payload: []byte(`{"fresh":true}`), MaxAttempts: 5, Now: r.now}}); err != nil {
		t.Fatal(err)
	}
	if n, retryIn, _ := p.RunOnce(t.Context(), r.now); n != 0 || retryIn <= 0 {
		t.Fatalf("while open: claimed %d (retry in %v), want none", n, retryIn)
	}
	// Every failed job's retry is due too; the probe takes the fresh one.
	r.now = r.now.Add(time.Minute)
	down = false
	r.ran = make(chan *store.Job, 10)
	if n, _, _ := p.RunOnce(t.Context(), r.now); n != 1 {
		t.Fatalf("after the timeout: claimed %d, want the one probe", n)
	}
	if b := r.breakerRow(); b.State != store.BreakerHalfOpen || b.ProbeOwner != e.BreakerOwner() {
		t.Fatalf("breaker during the probe = %+v; want half-open, held by %s", b, e.BreakerOwner())
	}
	if n, _, _ := p.RunOnce(t.Context(), r.now); n != 0 {
		t.Fatalf("during the probe: claimed %d more, want none", n)
	}
	settle(e, -1)
	if j := <-r.ran; string(j.Payload) != `{"fresh":true}` {
		t.Fatalf("the probe ran %s (attempt %d), want the job that never ran", j.Payload, j.Attempts)
	}
	if b = r.breakerRow(); !b.Closed() || b.Failures != 0 {
		t.Fatalf("breaker after the probe = %+v; want closed", b)
	}
	if n, _, _ := p.RunOnce(t.Context(), r.now); n != 1 {
		t.Fatalf("after the close: claimed %d, want 1 (one worker)", n)
	}
	settle(e, -1)
}

// TestBreakers_ProbePrefersDependencyFailure: with no job that never ran,
// the probe takes one whose last attempt failed on the dependency, not
// the one that failed on its own input (of higher priority).
func TestBreakers_ProbePrefersDependencyFailure(t *testing.T) {
	r := newRig(t, 2)
	r.cfg.Workers, r.cfg.ClaimBatch = 1, 1
	r.run = func(_ context.Context, j *store.Job) (any, error) {
		if string(j.Payload) == `{"bad":true}` {
			return nil, errors.New("bad input")
		}
		if j.Attempts == 1 {
			return nil, context.DeadlineExceeded
		}
		return nil, nil
	}
	if _, err := r.st.Insert(t.Context(), []store.InsertParams{{Task: "t", Payload: []byte(`{"bad":true}`), Priority: 2, MaxAttempts: 5, Now: r.now}}); err != nil {
		t.Fatal(err)
	}
	r.enqueue("t", 0, 2)
	e := r.engine()
	p := newProducer(e)
	for range 3 {
		if n, _, _ := p.RunOnce(t.Context(), r.now); n != 1 {
			t.Fatalf("claimed %d, want 1", n)
		}
		settle(e, -1)
	}
	if b := r.breakerRow(); b.State != store.BreakerOpen {
		t.Fatalf("breaker = %+v, want open", b)
	}
	r.now = r.now.Add(time.Minute) // every retry is due
	r.ran = make(chan *store.Job, 10)
	if n, _, _ := p.RunOnce(t.Context(), r.now); n != 1 {
		t.Fatalf("claimed %d, want the probe", n)
	}
	settle(e, -1)
	if j := <-r.ran; string(j.Payload) == `{"bad":true}` {
		t.Fatalf("the probe ran the job that failed on its own input (attempt %d)", j.Attempts)
	}
	if b := r.breakerRow(); !b.Closed() {
		t.Fatalf("breaker = %+v, want closed after the probe succeeded", b)
	}
}

// TestBreakers_OpenedAfterClaimHoldsStart: jobs claimed while the breaker
// was closed do not start once a counted failure has opened it (the
// stored row is the one state the start checks): the first job's failure
// opens it (threshold 1), the two others go back to pending unspent, and
// the engine reports one change to open with its event.
func TestBreakers_OpenedAfterClaimHoldsStart(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Workers, r.cfg.ClaimBatch = 3, 3
	r.cfg.Breakers = map[string]breaker.Policy{"": {Threshold: 1, Timeout: time.Minute}}
	events := NewEvents(slog.Default(), time.Now)
	circuits, cancel := events.Subscribe("test", []EventKind{queuemaxtype.EventCircuit}, 4)
	defer cancel()
	r.cfg.Events = events
	r.run = func(context.Context, *store.Job) (any, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	r.enqueue("t", 0, 3)
	e := r.engine()
	if n, _, err := newProducer(e).RunOnce(t.Context(), r.now); err != nil || n != 3 {
		t.Fatalf("RunOnce = %d, %v; want all 3 jobs", n, err)
	}
	settle(e, -1)
	if len(r.ran) != 1 {
		t.Fatalf("%d handlers ran; want only the one that opened the breaker", len(r.ran))
	}
	if pending, processing := r.counts(); pending != 2 || processing != 0 {
		t.Errorf("pending %d, processing %d; want the 2 held jobs back in pending", pending, processing)
	}
	jobs, err := r.st.Jobs(t.Context(), store.ListParams{Shard: store.AllShards, Status: store.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Attempts != 0 {
			t.Errorf("held job %d has %d attempts; want it unspent", j.ID, j.Attempts)
		}
	}
	select {
	case ev := <-circuits:
		if ev.From != "closed" || ev.To != "open" {
			t.Errorf("event %s → %s; want closed → open", ev.From, ev.To)
		}
	default:
		t.Error("no circuit_state_changed event")
	}
	if bs, _ := e.BreakerStats(); bs[""].State != breaker.Open || bs[""].StateChanges != 1 {
		t.Errorf("stats %+v; want open after one change", bs[""])
	}
}
