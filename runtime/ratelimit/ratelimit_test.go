package ratelimit

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// approx compares token counts, which are computed in floating point.
var approx = cmpopts.EquateApprox(0, 1e-6)

// mustNew is New for arguments the test knows are valid.
func mustNew(t *testing.T, limit int, per time.Duration, burst int) *Limiter {
	t.Helper()
	l, err := New(limit, per, burst)
	if err != nil {
		t.Fatalf("New(%d, %v, %d) error = %v", limit, per, burst, err)
	}
	return l
}

// drain takes n tokens, all of which must be available.
func drain(t *testing.T, l *Limiter, n int) {
	t.Helper()
	for i := range n {
		if !l.TryAcquire() {
			t.Fatalf("TryAcquire() #%d = false, want true while draining %d tokens", i, n)
		}
	}
}

// acquireAsync runs Acquire in a goroutine and returns a channel that
// receives its error and how long it blocked.
func acquireAsync(ctx context.Context, l *Limiter) <-chan result {
	ch := make(chan result, 1)
	go func() {
		start := time.Now()
		err := l.Acquire(ctx)
		ch <- result{err: err, waited: time.Since(start)}
	}()
	return ch
}

type result struct {
	err    error
	waited time.Duration
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		limit   int
		per     time.Duration
		burst   int
		want    Stats
		wantErr string // substring; empty means no error
	}{
		{name: "BurstDefaultsToLimit", limit: 5, per: time.Second, want: Stats{Tokens: 5, Limit: 5, Per: time.Second, Burst: 5}},
		{name: "ExplicitBurst", limit: 5, per: time.Minute, burst: 2, want: Stats{Tokens: 2, Limit: 5, Per: time.Minute, Burst: 2}},
		{name: "BurstAboveLimit", limit: 1, per: time.Hour, burst: 10, want: Stats{Tokens: 10, Limit: 1, Per: time.Hour, Burst: 10}},
		{name: "ZeroLimit", limit: 0, per: time.Second, wantErr: "limit"},
		{name: "NegativeLimit", limit: -3, per: time.Second, wantErr: "limit"},
		{name: "ZeroPer", limit: 1, per: 0, wantErr: "per"},
		{name: "NegativePer", limit: 1, per: -time.Second, wantErr: "per"},
		{name: "NegativeBurst", limit: 1, per: time.Second, burst: -1, wantErr: "burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := New(tt.limit, tt.per, tt.burst)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New(%d, %v, %d) error = %v, want one naming %q", tt.limit, tt.per, tt.burst, err, tt.wantErr)
				}
				if l != nil {
					t.Errorf("New(%d, %v, %d) = %v, want nil on error", tt.limit, tt.per, tt.burst, l)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%d, %v, %d) error = %v", tt.limit, tt.per, tt.burst, err)
			}
			if diff := cmp.Diff(tt.want, l.Stats(), approx); diff != "" {
				t.Errorf("New(%d, %v, %d).Stats() mismatch (-want +got):\n%s", tt.limit, tt.per, tt.burst, diff)
			}
		})
	}
}

func TestPerHelpers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		new  func(int) (*Limiter, error)
		want Stats
	}{
		{"PerSecond", PerSecond, Stats{Tokens: 7, Limit: 7, Per: time.Second, Burst: 7}},
		{"PerMinute", PerMinute, Stats{Tokens: 7, Limit: 7, Per: time.Minute, Burst: 7}},
		{"PerHour", PerHour, Stats{Tokens: 7, Limit: 7, Per: time.Hour, Burst: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := tt.new(7)
			if err != nil {
				t.Fatalf("%s(7) error = %v", tt.name, err)
			}
			if diff := cmp.Diff(tt.want, l.Stats(), approx); diff != "" {
				t.Errorf("%s(7).Stats() mismatch (-want +got):\n%s", tt.name, diff)
			}
			if _, err := tt.new(0); err == nil {
				t.Errorf("%s(0) error = nil, want an error", tt.name)
			}
		})
	}
}

// TestLimiter_RateHolds checks that many concurrent acquirers together get
// R tokens per second, within 10%, over several fake seconds.
func TestLimiter_RateHolds(t *testing.T) {
	t.Parallel()
	const seconds = 5
	tests := []struct {
		name    string
		limit   int
		per     time.Duration
		burst   int
		workers int
	}{
		{name: "10PerSecond", limit: 10, per: time.Second, workers: 20},
		{name: "100PerSecond", limit: 100, per: time.Second, workers: 50},
		{name: "1000PerSecondBurst1", limit: 1000, per: time.Second, burst: 1, workers: 64},
		{name: "600PerMinute", limit: 600, per: time.Minute, workers: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, tt.limit, tt.per, tt.burst)
				drain(t, l, l.Stats().Burst) // measure the refill rate, not the initial burst
				ctx, cancel := context.WithTimeout(t.Context(), seconds*time.Second)
				defer cancel()
				var got atomic.Int64
				var wg sync.WaitGroup
				for range tt.workers {
					wg.Go(func() {
						for l.Acquire(ctx) == nil {
							got.Add(1)
						}
					})
				}
				wg.Wait()
				want := float64(tt.limit) * float64(seconds*time.Second) / float64(tt.per)
				t.Logf("%d acquirers got %d tokens in %ds, want %v", tt.workers, got.Load(), seconds, want)
				if n := float64(got.Load()); math.Abs(n-want) > 0.1*want {
					t.Errorf("%d acquirers got %v tokens in %ds, want %v ±10%%", tt.workers, n, seconds, want)
				}
				if s := l.Stats(); s.Waiting != 0 {
					t.Errorf("Stats().Waiting = %d after all acquirers returned, want 0", s.Waiting)
				}
			})
		})
	}
}

// TestLimiter_AcquireWakesWhenTokenDue checks that a lone waiter is woken by
// the time its token is due, long before its deadline (queue-max's waiter
// slept until its timeout).
func TestLimiter_AcquireWakesWhenTokenDue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		limit   int
		per     time.Duration
		burst   int
		advance time.Duration // time passed after draining, before Acquire
		want    time.Duration
	}{
		{name: "OnePer10s", limit: 1, per: 10 * time.Second, want: 10 * time.Second},
		{name: "ThreePerSecond", limit: 3, per: time.Second, want: 333333334 * time.Nanosecond},
		{name: "PartlyRefilled", limit: 1, per: 10 * time.Second, advance: 4 * time.Second, want: 6 * time.Second},
		{name: "PerHour", limit: 60, per: time.Hour, burst: 5, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, tt.limit, tt.per, tt.burst)
				drain(t, l, l.Stats().Burst)
				time.Sleep(tt.advance) // fake time: advances the bubble's clock
				ctx, cancel := context.WithTimeout(t.Context(), 24*time.Hour)
				defer cancel()
				start := time.Now()
				if err := l.Acquire(ctx); err != nil {
					t.Fatalf("Acquire() error = %v", err)
				}
				if got := time.Since(start); got != tt.want {
					t.Errorf("Acquire() blocked %v, want %v", got, tt.want)
				}
			})
		})
	}
}

func TestLimiter_AcquireFIFO(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, 1, time.Second, 1)
		drain(t, l, 1)
		start := time.Now()
		type grant struct {
			Waiter int
			At     time.Duration
		}
		var (
			mu  sync.Mutex
			got []grant
			wg  sync.WaitGroup
		)
		for i := range 5 {
			wg.Go(func() {
				if err := l.Acquire(t.Context()); err != nil {
					t.Errorf("waiter %d: Acquire() error = %v", i, err)
					return
				}
				mu.Lock()
				got = append(got, grant{i, time.Since(start)})
				mu.Unlock()
			})
			synctest.Wait() // waiter i is queued before waiter i+1 starts
		}
		if s := l.Stats(); s.Waiting != 5 {
			t.Fatalf("Stats().Waiting = %d, want 5", s.Waiting)
		}
		if l.TryAcquire() {
			t.Error("TryAcquire() = true while waiters are queued, want false")
		}
		wg.Wait()
		want := []grant{{0, 1 * time.Second}, {1, 2 * time.Second}, {2, 3 * time.Second}, {3, 4 * time.Second}, {4, 5 * time.Second}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("grant order mismatch (-want +got):\n%s", diff)
		}
		if s := l.Stats(); s.TotalWait != 15*time.Second {
			t.Errorf("Stats().TotalWait = %v, want 15s (1+2+3+4+5)", s.TotalWait)
		}
	})
}

func TestLimiter_AcquireContext(t *testing.T) {
	t.Parallel()

	t.Run("CancelledBeforeCall", func(t *testing.T) {
		t.Parallel()
		l := mustNew(t, 1, time.Second, 0)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := l.Acquire(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire(cancelled) error = %v, want %v", err, context.Canceled)
		}
		if diff := cmp.Diff(Stats{Tokens: 1, Limit: 1, Per: time.Second, Burst: 1, Denied: 1}, l.Stats(), approx); diff != "" {
			t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("DeadlineWhileWaiting", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, 1, time.Hour, 0)
			drain(t, l, 1)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			start := time.Now()
			err := l.Acquire(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Acquire() error = %v, want %v", err, context.DeadlineExceeded)
			}
			if got := time.Since(start); got != time.Second {
				t.Errorf("Acquire() returned after %v, want 1s (the deadline)", got)
			}
			want := Stats{Tokens: 1.0 / 3600, Limit: 1, Per: time.Hour, Burst: 1, Granted: 1, Denied: 1, TotalWait: time.Second}
			if diff := cmp.Diff(want, l.Stats(), approx); diff != "" {
				t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("CancelHeadPassesTurn", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, 1, time.Hour, 0)
			drain(t, l, 1)
			ctxA, cancelA := context.WithCancel(t.Context())
			a := acquireAsync(ctxA, l)
			synctest.Wait()
			b := acquireAsync(t.Context(), l)
			synctest.Wait()
			time.Sleep(time.Minute)
			cancelA()
			if r := <-a; !errors.Is(r.err, context.Canceled) || r.waited != time.Minute {
				t.Errorf("head Acquire() = (%v after %v), want (%v after 1m)", r.err, r.waited, context.Canceled)
			}
			if r := <-b; r.err != nil || r.waited != time.Hour {
				t.Errorf("second Acquire() = (%v after %v), want (nil after 1h, when the token is due)", r.err, r.waited)
			}
		})
	})

	t.Run("CancelMiddleWaiter", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, 1, time.Second, 0)
			drain(t, l, 1)
			a := acquireAsync(t.Context(), l)
			synctest.Wait()
			ctxB, cancelB := context.WithCancel(t.Context())
			b := acquireAsync(ctxB, l)
			synctest.Wait()
			c := acquireAsync(t.Context(), l)
			synctest.Wait()
			cancelB()
			if r := <-b; !errors.Is(r.err, context.Canceled) || r.waited != 0 {
				t.Errorf("middle Acquire() = (%v after %v), want (%v after 0s)", r.err, r.waited, context.Canceled)
			}
			if r := <-a; r.err != nil || r.waited != time.Second {
				t.Errorf("first Acquire() = (%v after %v), want (nil after 1s)", r.err, r.waited)
			}
			if r := <-c; r.err != nil || r.waited != 2*time.Second {
				t.Errorf("third Acquire() = (%v after %v), want (nil after 2s)", r.err, r.waited)
			}
		})
	})
}
