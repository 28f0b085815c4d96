package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// flakyStore fails the first failComplete Complete calls and the first
// failFail Fail calls with a transient storage error, and counts calls.
type flakyStore struct {
	store.Store
	failComplete, failFail int32
	completes, fails       atomic.Int32
	acked                  atomic.Int32 // items passed to Complete
}

var errTransient = errors.New("disk I/O error (transient)")

func (s *flakyStore) Complete(ctx context.Context, acks []store.CompleteParams) []error {
	s.acked.Add(int32(len(acks)))
	if s.completes.Add(1) <= s.failComplete {
		errs := make([]error, len(acks))
		for i := range errs {
			errs[i] = errTransient
		}
		return errs
	}
	return s.Store.Complete(ctx, acks)
}

func (s *flakyStore) Fail(ctx context.Context, fails []store.FailParams) []error {
	if s.fails.Add(1) <= s.failFail {
		errs := make([]error, len(fails))
		for i := range errs {
			errs[i] = errTransient
		}
		return errs
	}
	return s.Store.Fail(ctx, fails)
}

func shortAckRetry(t *testing.T) {
	old := ackRetry
	ackRetry = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { ackRetry = old })
}

// TestAcker_RunOnceSetBased: the successes of a claim are acknowledged in
// one Complete call, and Hooks.OnComplete runs for each after the commit.
func TestAcker_RunOnceSetBased(t *testing.T) {
	r := newRig(t, 2)
	fs := &flakyStore{Store: r.st}
	r.cfg.Store = fs
	r.cfg.Workers, r.cfg.ClaimBatch = 4, 8
	var completed atomic.Int32
	r.hooks.OnComplete = func(context.Context, *store.Job, any) { completed.Add(1) }
	r.enqueue("t", 0, 8)
	e := r.engine()
	if n, _, err := newProducer(e).RunOnce(t.Context(), r.now); err != nil || n != 8 {
		t.Fatalf("RunOnce = %d, %v; want 8", n, err)
	}
	settle(e, 8) // runs all 8, then one acknowledger round
	if c := fs.completes.Load(); c != 1 || fs.acked.Load() != 8 {
		t.Errorf("%d Complete calls for %d acks, want 1 for 8", c, fs.acked.Load())
	}
	if s := e.Stats(); s.Processed != 8 || completed.Load() != 8 || e.Active() != 0 {
		t.Errorf("processed %d, completed hooks %d, active %d; want 8, 8, 0", s.Processed, completed.Load(), e.Active())
	}
	if n := e.acks.RunOnce(); n != 0 {
		t.Errorf("a second round flushed %d, want 0", n)
	}
}

// TestAcker_RunOnceRetriesTransientError: an acknowledgement that fails
// with a storage error is retried after a short backoff and commits; the
// job is not left to orphan recovery.
func TestAcker_RunOnceRetriesTransientError(t *testing.T) {
	shortAckRetry(t)
	r := newRig(t, 1)
	fs := &flakyStore{Store: r.st, failComplete: 1}
	r.cfg.Store = fs
	r.enqueue("t", 0, 2)
	e := r.engine()
	if n, _, _ := newProducer(e).RunOnce(t.Context(), r.now); n != 2 {
		t.Fatalf("claimed %d, want 2", n)
	}
	settle(e, -1)
	if c := fs.completes.Load(); c != 2 {
		t.Errorf("%d Complete calls, want 2 (the failed one and its retry)", c)
	}
	if s := e.Stats(); s.Processed != 2 || s.LeaseLost != 0 || e.Active() != 0 {
		t.Errorf("stats %+v, active %d; want 2 processed, none lost, none held", s, e.Active())
	}
	if pending, processing := r.counts(); pending != 0 || processing != 0 {
		t.Errorf("pending %d, processing %d; want both completed", pending, processing)
	}
}

// TestAcker_RunOnceGivesUp: a storage error that outlasts the backoff
// leaves the job processing for orphan recovery, and is not counted.
func TestAcker_RunOnceGivesUp(t *testing.T) {
	shortAckRetry(t)
	r := newRig(t, 1)
	fs := &flakyStore{Store: r.st, failComplete: 100}
	r.cfg.Store = fs
	r.enqueue("t", 0, 1)
	e := r.engine()
	newProducer(e).RunOnce(t.Context(), r.now)
	settle(e, -1)
	if c := fs.completes.Load(); c != int32(1+len(ackRetry)) {
		t.Errorf("%d Complete calls, want %d (bounded)", c, 1+len(ackRetry))
	}
	if s := e.Stats(); s.Processed != 0 || e.Active() != 0 {
		t.Errorf("processed %d, active %d; want 0, 0", s.Processed, e.Active())
	}
	if _, processing := r.counts(); processing != 1 {
		t.Errorf("processing %d, want 1 (left to orphan recovery)", processing)
	}
}

// TestAcker_LeaseLostIsFinal: a rejected acknowledgement is not retried.
func TestAcker_LeaseLostIsFinal(t *testing.T) {
	shortAckRetry(t)
	r := newRig(t, 1)
	fs := &flakyStore{Store: r.st}
	r.cfg.Store = fs
	r.enqueue("t", 0, 1)
	e := r.engine()
	r.run = func(ctx context.Context, j *store.Job) (any, error) {
		// Another worker took the job back while it ran.
		if _, err := r.st.RecoverOrphans(ctx, r.now.Add(time.Hour), r.now); err != nil {
			t.Error(err)
		}
		return nil, nil
	}
	newProducer(e).RunOnce(t.Context(), r.now)
	settle(e, -1)
	if c := fs.completes.Load(); c != 1 {
		t.Errorf("%d Complete calls, want 1 (ErrLeaseLost is final)", c)
	}
	if s := e.Stats(); s.Processed != 0 || s.LeaseLost != 1 || e.Active() != 0 {
		t.Errorf("stats %+v, active %d; want 1 lease lost", s, e.Active())
	}
}

// TestEngine_FailRetriesTransientError: recording a failed attempt is
// retried the same way.
func TestEngine_FailRetriesTransientError(t *testing.T) {
	shortAckRetry(t)
	r := newRig(t, 1)
	fs := &flakyStore{Store: r.st, failFail: 1}
	r.cfg.Store = fs
	r.run = func(context.Context, *store.Job) (any, error) { return nil, queuemaxtype.Permanent(errors.New("boom")) }
	r.enqueue("t", 0, 1)
	e := r.engine()
	newProducer(e).RunOnce(t.Context(), r.now)
	settle(e, -1)
	if c := fs.fails.Load(); c != 2 {
		t.Errorf("%d Fail calls, want 2", c)
	}
	if s := e.Stats(); s.Failed != 1 || e.Active() != 0 {
		t.Errorf("failed %d, active %d; want 1, 0", s.Failed, e.Active())
	}
}

// TestEngine_RunReturnsWhenCompletedHangs: an OnComplete hook that never
// returns holds up the acknowledger, but not Run: the drain gives up on it
// after DrainTimeout and the grace periods.
func TestEngine_RunReturnsWhenCompletedHangs(t *testing.T) {
	r := newRig(t, 1)
	r.cfg.Now = time.Now
	r.cfg.DrainTimeout, r.cfg.ShutdownGrace = 20*time.Millisecond, 20*time.Millisecond
	hang, entered := make(chan struct{}), make(chan struct{}, 1)
	defer close(hang)
	r.hooks.OnComplete = func(context.Context, *store.Job, any) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-hang
	}
	r.enqueue("t", 0, 1)
	e := r.engine()
	done := make(chan struct{})
	go func() { e.Run(t.Context()); close(done) }()
	<-entered
	e.Stop()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return while a Completed callback hung")
	}
}
