package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Call, tickets, a nil Breaker, notifications and concurrent use.

func TestBreaker_Call(t *testing.T) {
	t.Parallel()
	isFailure := func(err error) bool { return !errors.Is(err, errClient) }

	t.Run("CountsFailuresAndRejects", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, Config{Threshold: 2, Timeout: 30 * time.Second, IsFailure: isFailure})
			fail := func(context.Context) error { return errService }
			for range 2 {
				if err := b.Call(t.Context(), fail); !errors.Is(err, errService) {
					t.Fatalf("Call(failing) error = %v, want %v", err, errService)
				}
			}
			time.Sleep(10 * time.Second)
			ran := false
			err := b.Call(t.Context(), func(context.Context) error { ran = true; return nil })
			if ran {
				t.Error("Call ran fn while the breaker was open")
			}
			if !errors.Is(err, ErrOpen) {
				t.Errorf("Call() error = %v, want errors.Is ErrOpen", err)
			}
			var oe *OpenError
			if !errors.As(err, &oe) {
				t.Fatalf("Call() error = %T, want *OpenError", err)
			}
			want := &OpenError{State: Open, RetryIn: 20 * time.Second, Failures: 2, Threshold: 2}
			if diff := cmp.Diff(want, oe); diff != "" {
				t.Errorf("OpenError mismatch (-want +got):\n%s", diff)
			}
			if got, want := oe.Error(), "queuemax: circuit breaker open (retry in 20s, failures 2/2)"; got != want {
				t.Errorf("OpenError.Error() = %q, want %q", got, want)
			}
		})
	})

	t.Run("FilteredErrorReleasesProbe", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, Config{Threshold: 1, Timeout: time.Second, IsFailure: isFailure})
			b.Failure()
			time.Sleep(time.Second)
			if err := b.Call(t.Context(), func(context.Context) error { return errClient }); !errors.Is(err, errClient) {
				t.Fatalf("Call(client error) error = %v, want %v", err, errClient)
			}
			if s := b.Stats(); s.State != HalfOpen || s.ProbeInFlight {
				t.Fatalf("after a filtered probe error: state %v, probe in flight %v; want half_open, false", s.State, s.ProbeInFlight)
			}
			// A filtered error in the closed state counts as nothing either.
			if err := b.Call(t.Context(), func(context.Context) error { return nil }); err != nil {
				t.Fatalf("Call(ok) error = %v", err)
			}
			b.Call(t.Context(), func(context.Context) error { return errClient })
			if diff := cmp.Diff(Stats{State: Closed, Threshold: 1, Timeout: time.Second, TotalOpen: time.Second, StateChanges: 3}, b.Stats()); diff != "" {
				t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("HalfOpenProbeTaken", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, Config{Threshold: 1, Timeout: time.Second})
			b.Failure()
			time.Sleep(time.Second)
			tk, ok := b.Allow()
			if !ok || !tk.Probe() {
				t.Fatalf("Allow() = (probe %v, %v), want the probe", tk.Probe(), ok)
			}
			err := b.Call(t.Context(), func(context.Context) error { return nil })
			var oe *OpenError
			if !errors.As(err, &oe) {
				t.Fatalf("Call() error = %v, want *OpenError", err)
			}
			if diff := cmp.Diff(&OpenError{State: HalfOpen, Failures: 1, Threshold: 1}, oe); diff != "" {
				t.Errorf("OpenError mismatch (-want +got):\n%s", diff)
			}
			if got, want := oe.Error(), "queuemax: circuit breaker half_open (probe in flight, failures 1/1)"; got != want {
				t.Errorf("OpenError.Error() = %q, want %q", got, want)
			}
			tk.Success()
			if got := b.State(); got != Closed {
				t.Errorf("State() after probe success = %v, want closed", got)
			}
		})
	})

	t.Run("CancelledContext", func(t *testing.T) {
		t.Parallel()
		b := mustNew(t, Config{Threshold: 1})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ran := false
		if err := b.Call(ctx, func(context.Context) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
			t.Errorf("Call(cancelled ctx) = (%v, ran %v), want (%v, ran false)", err, ran, context.Canceled)
		}
		ctx, cancel = context.WithCancel(t.Context())
		err := b.Call(ctx, func(ctx context.Context) error { cancel(); return ctx.Err() })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Call(cancelled during fn) error = %v, want %v", err, context.Canceled)
		}
		if got := b.Stats().Failures; got != 0 {
			t.Errorf("Stats().Failures = %d after a cancellation, want 0 (not counted)", got)
		}
	})

	t.Run("PanicRecordsFailure", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, Config{Threshold: 1, Timeout: time.Second})
			b.Failure()
			time.Sleep(time.Second)
			func() {
				defer func() {
					if r := recover(); r != "boom" {
						t.Errorf("recover() = %v, want boom", r)
					}
				}()
				b.Call(t.Context(), func(context.Context) error { panic("boom") })
			}()
			if s := b.Stats(); s.State != Open || s.ProbeInFlight {
				t.Errorf("after a panicking probe: state %v, probe in flight %v; want open, false", s.State, s.ProbeInFlight)
			}
		})
	})
}

func TestTicket_Done(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		isFailure func(error) bool
		err       error
		want      Stats
	}{
		{name: "NilIsSuccess", err: nil,
			want: Stats{State: Closed, Threshold: 1, Timeout: time.Minute, TotalOpen: time.Minute, StateChanges: 3}},
		{name: "ErrorIsFailure", err: errService,
			want: Stats{State: Open, Failures: 2, Threshold: 1, Timeout: time.Minute, RecoveryRemaining: time.Minute, TotalOpen: time.Minute, StateChanges: 3}},
		{name: "FilteredIsRelease", isFailure: func(err error) bool { return err != errClient }, err: errClient,
			want: Stats{State: HalfOpen, Failures: 1, Threshold: 1, Timeout: time.Minute, TotalOpen: time.Minute, StateChanges: 2}},
		{name: "UnfilteredIsFailure", isFailure: func(err error) bool { return err != errClient }, err: errService,
			want: Stats{State: Open, Failures: 2, Threshold: 1, Timeout: time.Minute, RecoveryRemaining: time.Minute, TotalOpen: time.Minute, StateChanges: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Config{Threshold: 1, IsFailure: tt.isFailure})
				b.Failure()
				time.Sleep(time.Minute)
				tk, ok := b.Allow()
				if !ok {
					t.Fatal("Allow() after timeout = false, want the probe")
				}
				tk.Done(tt.err)
				if diff := cmp.Diff(tt.want, b.Stats()); diff != "" {
					t.Errorf("Stats() after Done(%v) mismatch (-want +got):\n%s", tt.err, diff)
				}
			})
		})
	}
}

func TestBreaker_Nil(t *testing.T) {
	t.Parallel()
	var b *Breaker
	tk, ok := b.Allow()
	if !ok {
		t.Error("nil Allow() = false, want true")
	}
	tk.Success()
	tk.Failure()
	tk.Release()
	tk.Done(errService)
	b.Success()
	b.Failure()
	b.Reset()
	if got := b.State(); got != Closed {
		t.Errorf("nil State() = %v, want closed", got)
	}
	if err := b.Call(t.Context(), func(context.Context) error { return errService }); !errors.Is(err, errService) {
		t.Errorf("nil Call() error = %v, want %v", err, errService)
	}
	if diff := cmp.Diff(Stats{}, b.Stats()); diff != "" {
		t.Errorf("nil Stats() mismatch (-want +got):\n%s", diff)
	}
	var zero Ticket
	zero.Success()
	zero.Failure()
	zero.Release()
	zero.Done(nil)
}

// TestBreaker_NotificationsReentrant checks that OnStateChange may call the
// breaker (it is never called under the lock) and that transitions it causes
// are delivered after the current one, in order.
func TestBreaker_NotificationsReentrant(t *testing.T) {
	t.Parallel()
	var (
		b   *Breaker
		got []string
	)
	b = mustNew(t, Config{Threshold: 1, OnStateChange: func(from, to State) {
		got = append(got, fmt.Sprintf("%v->%v (stats say %v)", from, to, b.Stats().State))
		if to == Open {
			b.Reset()
		}
	}})
	b.Failure()
	want := []string{"closed->open (stats say open)", "open->closed (stats say closed)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnStateChange calls mismatch (-want +got):\n%s", diff)
	}
}

func TestBreaker_NotificationPanic(t *testing.T) {
	t.Parallel()
	var got []string
	b := mustNew(t, Config{Threshold: 1, OnStateChange: func(from, to State) {
		got = append(got, from.String()+"->"+to.String())
		if len(got) == 1 {
			panic("callback bug")
		}
	}})
	func() {
		defer func() {
			if r := recover(); r != "callback bug" {
				t.Errorf("recover() = %v, want the callback's panic", r)
			}
		}()
		b.Failure()
	}()
	b.Reset() // delivery was handed back, so this one is delivered
	want := []string{"closed->open", "open->closed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnStateChange calls mismatch (-want +got):\n%s", diff)
	}
}

// TestBreaker_Concurrent hammers the breaker from many goroutines under the
// race detector and checks that every transition is notified exactly once,
// in order: the notifications form a chain from closed whose length is
// Stats().StateChanges.
func TestBreaker_Concurrent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			notes    []transition
			inNotify sync.Mutex // TryLock detects concurrent delivery
			overlap  atomic.Bool
		)
		b := mustNew(t, Config{Threshold: 3, Timeout: 5 * time.Millisecond, OnStateChange: func(from, to State) {
			if !inNotify.TryLock() {
				overlap.Store(true)
				return
			}
			notes = append(notes, transition{from, to})
			inNotify.Unlock()
		}})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i := range 24 {
			wg.Go(func() {
				n := 0
				for ctx.Err() == nil {
					n++
					switch {
					case i%6 == 0:
						b.Failure()
					case i%6 == 1:
						b.Success()
					case i == 2 && n%50 == 0:
						b.Reset()
					default:
						tk, ok := b.Allow()
						if !ok {
							break
						}
						switch (i + n) % 3 {
						case 0:
							tk.Success()
						case 1:
							tk.Failure()
						default:
							tk.Release()
						}
					}
					_ = b.Stats()
					time.Sleep(time.Duration(1+i%4) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		if overlap.Load() {
			t.Fatal("OnStateChange was called concurrently with itself")
		}
		s := b.Stats()
		t.Logf("%d transitions, %d rejections", len(notes), s.Rejected)
		if uint64(len(notes)) != s.StateChanges {
			t.Errorf("got %d notifications, want Stats().StateChanges = %d", len(notes), s.StateChanges)
		}
		if len(notes) < 10 {
			t.Errorf("only %d transitions under contention; the test exercises too little", len(notes))
		}
		prev := Closed
		for i, n := range notes {
			if n.from != prev || n.from == n.to {
				t.Fatalf("notification %d is %v->%v after a transition to %v: lost or reordered", i, n.from, n.to, prev)
			}
			prev = n.to
		}
		if prev != s.State {
			t.Errorf("last notification ends in %v, but State is %v", prev, s.State)
		}
	})
}

// TestBreaker_ConcurrentProbe checks that only one of many concurrent Allow
// calls gets the half-open probe, and that releasing it lets exactly one more
// through.
func TestBreaker_ConcurrentProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Threshold: 1, Timeout: time.Second})
		b.Failure()
		time.Sleep(time.Second)
		for round := range 3 {
			var (
				mu      sync.Mutex
				tickets []Ticket
				wg      sync.WaitGroup
			)
			for range 50 {
				wg.Go(func() {
					if tk, ok := b.Allow(); ok {
						mu.Lock()
						tickets = append(tickets, tk)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(tickets) != 1 || !tickets[0].Probe() {
				t.Fatalf("round %d: %d of 50 concurrent Allow calls got a ticket, want exactly the probe", round, len(tickets))
			}
			tickets[0].Release()
		}
		if got := b.Stats().Rejected; got != 3*49 {
			t.Errorf("Stats().Rejected = %d, want %d", got, 3*49)
		}
	})
}
