package ratelimit

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Update, Reset, RetryAfter, Stats, Refund, a nil Limiter and concurrent use.

func TestLimiter_Update(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		limit int
		burst int
		// drainN tokens are taken, then before passes, then Update(update),
		// then after passes.
		drainN        int
		before, after time.Duration
		update        int
		want          Stats
	}{
		{
			name: "RefillsAtOldRateFirst", limit: 2, drainN: 2,
			before: 250 * time.Millisecond, update: 4, after: 125 * time.Millisecond,
			want: Stats{Tokens: 1, Limit: 4, Per: time.Second, Burst: 4, Granted: 2},
		},
		{
			name: "DefaultBurstFollowsLimitDown", limit: 10, update: 2,
			want: Stats{Tokens: 2, Limit: 2, Per: time.Second, Burst: 2},
		},
		{
			name: "DefaultBurstFollowsLimitUp", limit: 2, update: 10, after: time.Second,
			want: Stats{Tokens: 10, Limit: 10, Per: time.Second, Burst: 10},
		},
		{
			name: "ExplicitBurstKept", limit: 2, burst: 3, update: 10, after: time.Second,
			want: Stats{Tokens: 3, Limit: 10, Per: time.Second, Burst: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, tt.limit, time.Second, tt.burst)
				drain(t, l, tt.drainN)
				time.Sleep(tt.before)
				if err := l.Update(tt.update); err != nil {
					t.Fatalf("Update(%d) error = %v", tt.update, err)
				}
				time.Sleep(tt.after)
				if diff := cmp.Diff(tt.want, l.Stats(), approx); diff != "" {
					t.Errorf("Stats() after Update(%d) mismatch (-want +got):\n%s", tt.update, diff)
				}
			})
		})
	}

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		l := mustNew(t, 5, time.Second, 0)
		for _, n := range []int{0, -1} {
			if err := l.Update(n); err == nil || !strings.Contains(err.Error(), "limit") {
				t.Errorf("Update(%d) error = %v, want one naming limit", n, err)
			}
		}
		if got := l.Stats().Limit; got != 5 {
			t.Errorf("Stats().Limit = %d after invalid updates, want 5", got)
		}
	})

	t.Run("WakesWaiterEarly", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, 1, time.Hour, 1)
			drain(t, l, 1)
			r := acquireAsync(t.Context(), l)
			synctest.Wait()
			time.Sleep(time.Minute)
			if err := l.Update(3600); err != nil {
				t.Fatalf("Update(3600) error = %v", err)
			}
			// One minute at 1/h earned 1/60 token; at 1/s the rest takes 59/60 s.
			want := time.Minute + time.Second*59/60
			if got := <-r; got.err != nil || got.waited < want || got.waited > want+time.Microsecond {
				t.Errorf("Acquire() = (%v after %v), want (nil after %v)", got.err, got.waited, want)
			}
		})
	})
}

func TestLimiter_Reset(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, 1, time.Hour, 5)
		drain(t, l, 5)
		if l.TryAcquire() {
			t.Fatal("TryAcquire() on an empty bucket = true, want false")
		}
		var rs []<-chan result
		for range 3 {
			rs = append(rs, acquireAsync(t.Context(), l))
			synctest.Wait()
		}
		time.Sleep(time.Minute)
		l.Reset()
		for i, r := range rs {
			if got := <-r; got.err != nil || got.waited != time.Minute {
				t.Errorf("waiter %d: Acquire() = (%v after %v), want (nil after 1m)", i, got.err, got.waited)
			}
		}
		// Reset zeroed the counters; the three waiters were then granted.
		want := Stats{Tokens: 2, Limit: 1, Per: time.Hour, Burst: 5, Granted: 3, TotalWait: 3 * time.Minute}
		if diff := cmp.Diff(want, l.Stats(), approx); diff != "" {
			t.Errorf("Stats() after Reset mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestLimiter_RetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		drainN  int
		waiters int
		advance time.Duration
		want    time.Duration
	}{
		{name: "Full", want: 0},
		{name: "OneLeft", drainN: 1, want: 0},
		{name: "Empty", drainN: 2, want: 500 * time.Millisecond},
		{name: "PartlyRefilled", drainN: 2, advance: 200 * time.Millisecond, want: 300 * time.Millisecond},
		{name: "BehindWaiters", drainN: 2, waiters: 2, want: 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, 2, time.Second, 0)
				drain(t, l, tt.drainN)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				for range tt.waiters {
					acquireAsync(ctx, l)
					synctest.Wait()
				}
				time.Sleep(tt.advance)
				if got := l.RetryAfter(); got != tt.want {
					t.Errorf("RetryAfter() = %v, want %v", got, tt.want)
				}
				cancel()
				synctest.Wait()
			})
		})
	}
}

func TestLimiter_Stats(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, 4, time.Second, 2)
		var got []Stats
		got = append(got, l.Stats())
		l.TryAcquire()
		l.TryAcquire()
		l.TryAcquire() // denied
		got = append(got, l.Stats())
		if err := l.Acquire(t.Context()); err != nil { // waits 250ms
			t.Fatalf("Acquire() error = %v", err)
		}
		got = append(got, l.Stats())
		time.Sleep(125 * time.Millisecond)
		got = append(got, l.Stats())
		want := []Stats{
			{Tokens: 2, Limit: 4, Per: time.Second, Burst: 2},
			{Tokens: 0, Limit: 4, Per: time.Second, Burst: 2, Granted: 2, Denied: 1},
			{Tokens: 0, Limit: 4, Per: time.Second, Burst: 2, Granted: 3, Denied: 1, TotalWait: 250 * time.Millisecond},
			{Tokens: 0.5, Limit: 4, Per: time.Second, Burst: 2, Granted: 3, Denied: 1, TotalWait: 250 * time.Millisecond},
		}
		if diff := cmp.Diff(want, got, approx); diff != "" {
			t.Errorf("Stats() sequence mismatch (-want +got):\n%s", diff)
		}
		if got, want := l.Remaining(), 0.5; math.Abs(got-want) > 1e-9 {
			t.Errorf("Remaining() = %v, want %v", got, want)
		}
	})
}

func TestLimiter_Refund(t *testing.T) {
	t.Parallel()

	t.Run("RestoresToken", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, 2, time.Second, 0)
			drain(t, l, 2)
			l.Refund()
			want := Stats{Tokens: 1, Limit: 2, Per: time.Second, Burst: 2, Granted: 1}
			if diff := cmp.Diff(want, l.Stats(), approx); diff != "" {
				t.Errorf("Stats() after Refund mismatch (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("CappedAtBurst", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, 2, time.Second, 0)
			l.Refund()
			l.Refund()
			want := Stats{Tokens: 2, Limit: 2, Per: time.Second, Burst: 2}
			if diff := cmp.Diff(want, l.Stats(), approx); diff != "" {
				t.Errorf("Stats() after Refund of a full bucket mismatch (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("WakesWaiter", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, 1, time.Hour, 0)
			drain(t, l, 1)
			r := acquireAsync(t.Context(), l)
			synctest.Wait()
			time.Sleep(time.Second)
			l.Refund()
			if got := <-r; got.err != nil || got.waited != time.Second {
				t.Errorf("Acquire() = (%v after %v), want (nil after 1s, at the refund)", got.err, got.waited)
			}
		})
	})
}

func TestLimiter_Nil(t *testing.T) {
	t.Parallel()
	var l *Limiter
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Acquire(ctx); err != nil {
		t.Errorf("nil Acquire() error = %v, want nil", err)
	}
	if !l.TryAcquire() {
		t.Error("nil TryAcquire() = false, want true")
	}
	if got := l.Remaining(); !math.IsInf(got, 1) {
		t.Errorf("nil Remaining() = %v, want +Inf", got)
	}
	if got := l.RetryAfter(); got != 0 {
		t.Errorf("nil RetryAfter() = %v, want 0", got)
	}
	if err := l.Update(5); err == nil {
		t.Error("nil Update(5) error = nil, want an error")
	}
	l.Reset()
	l.Refund()
	if diff := cmp.Diff(Stats{}, l.Stats()); diff != "" {
		t.Errorf("nil Stats() mismatch (-want +got):\n%s", diff)
	}
}

// TestLimiter_Concurrent mixes every method from many goroutines for the race
// detector and checks that no token is handed out twice.
func TestLimiter_Concurrent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, 50, time.Second, 10)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		var granted atomic.Int64
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() {
				for ctx.Err() == nil {
					switch i % 4 {
					case 0:
						if l.TryAcquire() {
							granted.Add(1)
						}
						time.Sleep(3 * time.Millisecond)
					case 3:
						_ = l.Remaining()
						_ = l.RetryAfter()
						_ = l.Stats()
						time.Sleep(7 * time.Millisecond)
					default:
						wctx, wcancel := context.WithTimeout(ctx, time.Duration(i)*time.Millisecond)
						if l.Acquire(wctx) == nil {
							granted.Add(1)
						}
						wcancel()
					}
				}
			})
		}
		wg.Wait()
		s := l.Stats()
		if s.Granted != uint64(granted.Load()) {
			t.Errorf("Stats().Granted = %d, callers counted %d", s.Granted, granted.Load())
		}
		// 10 burst + 2s × 50/s.
		if want := int64(110); granted.Load() > want+1 || granted.Load() < want*9/10 {
			t.Errorf("granted %d tokens in 2s at 50/s with burst 10, want about %d", granted.Load(), want)
		}
		if s.Waiting != 0 {
			t.Errorf("Stats().Waiting = %d, want 0", s.Waiting)
		}
	})
}
