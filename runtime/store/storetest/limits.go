package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testLimitsArea runs the Limits area (stores that implement
// store.Limiter).
func testLimitsArea(t *testing.T, s *suite) {
	open := func(t *testing.T) store.Limiter {
		st := s.setup(t, 2).st
		l := st
		return l
	}
	conc := store.LimitRule{Concurrency: 3}
	rate := store.LimitRule{Rate: 5, Per: time.Second}
	t.Run("ConcurrencyAcrossOwners", func(t *testing.T) {
		t.Parallel()
		l := open(t)
		ctx := t.Context()
		exp := t0.Add(time.Minute)
		take := func(owner string, want int) int {
			t.Helper()
			g, err := l.LimitTake(ctx, owner, []store.LimitTake{{Scope: store.TaskScope("t.A"), Rule: conc, Want: want}}, t0, exp)
			if err != nil {
				t.Fatalf("LimitTake: %v", err)
			}
			return g[0].N
		}
		if n := take("p1", 2); n != 2 {
			t.Fatalf("p1 took %d of 2; want 2", n)
		}
		if n := take("p2", 5); n != 1 {
			t.Fatalf("p2 took %d with 1 slot left; want 1", n)
		}
		if n := take("p3", 1); n != 0 {
			t.Fatalf("p3 took %d with no slot left; want 0", n)
		}
		if err := l.LimitGive(ctx, "p1", []store.LimitGive{{Scope: store.TaskScope("t.A"), Slots: 1}}, t0); err != nil {
			t.Fatalf("LimitGive: %v", err)
		}
		if n := take("p3", 4); n != 1 {
			t.Fatalf("p3 took %d after one slot came back; want 1", n)
		}
		us, err := l.LimitUsage(ctx, t0)
		if err != nil || len(us) != 1 || us[0].Running != 3 || us[0].Rule != conc {
			t.Fatalf("LimitUsage = %+v, %v; want one row with 3 running under %+v", us, err, conc)
		}
		// p2's slot expires with its lease unless refreshed; p1's is renewed.
		if err := l.LimitRefresh(ctx, "p1", []store.ScopeKey{{Scope: store.TaskScope("t.A")}}, t0, t0.Add(time.Hour)); err != nil {
			t.Fatalf("LimitRefresh: %v", err)
		}
		us, err = l.LimitUsage(ctx, exp)
		if err != nil || len(us) != 1 || us[0].Running != 1 {
			t.Fatalf("LimitUsage after the leases of p2 and p3 expired = %+v, %v; want 1 running (p1's)", us, err)
		}
		g, err := l.LimitTake(ctx, "p4", []store.LimitTake{{Scope: store.TaskScope("t.A"), Rule: conc, Want: 9}}, exp, exp.Add(time.Minute))
		if err != nil || g[0].N != 2 {
			t.Fatalf("take after expiry = %+v, %v; want 2 (expired slots back)", g, err)
		}
	})
	t.Run("RateWindow", func(t *testing.T) {
		t.Parallel()
		l := open(t)
		ctx := t.Context()
		sc := store.TaskScope("t.R")
		take := func(at time.Time, want int) store.LimitGrant {
			t.Helper()
			g, err := l.LimitTake(ctx, "p", []store.LimitTake{{Scope: sc, Rule: rate, Want: want}}, at, at.Add(time.Minute))
			if err != nil {
				t.Fatalf("LimitTake: %v", err)
			}
			return g[0]
		}
		if g := take(t0, 3); g.N != 3 {
			t.Fatalf("first take = %+v; want 3 (a full bucket)", g)
		}
		g := take(t0.Add(400*time.Millisecond), 10)
		// A token comes back one period and a margin of a 50th of it after
		// its start.
		back := t0.Add(time.Second + 20*time.Millisecond)
		if g.N != 2 || !g.RetryAt.After(back) || g.RetryAt.After(back.Add(5*time.Millisecond)) {
			t.Fatalf("second take = %+v; want 2 and a retry just after %v", g, back)
		}
		// Unused tokens come back at once.
		if err := l.LimitGive(ctx, "p", []store.LimitGive{{Scope: sc, Tokens: 2, At: t0.Add(400 * time.Millisecond)}}, t0.Add(500*time.Millisecond)); err != nil {
			t.Fatalf("LimitGive: %v", err)
		}
		if g := take(t0.Add(600*time.Millisecond), 10); g.N != 2 {
			t.Fatalf("take after giving back 2 = %+v; want 2", g)
		}
		// No window of one second holds more than 5 starts: the first 3
		// come back only at t0+1s.
		if g := take(t0.Add(1015*time.Millisecond), 10); g.N != 0 {
			t.Fatalf("take before the period and margin passed = %+v; want 0", g)
		}
		if g := take(back.Add(time.Millisecond), 10); g.N != 3 {
			t.Fatalf("take after the period = %+v; want the 3 first tokens back", g)
		}
		// A take's tokens moved to when its jobs started come back a period
		// after that.
		at := t0.Add(3 * time.Second)
		if g := take(at, 5); g.N != 5 {
			t.Fatalf("take of a full bucket = %+v; want 5", g)
		}
		if err := l.LimitGive(ctx, "p", []store.LimitGive{{Scope: sc, Tokens: 1, At: at, Used: 4, StartedAt: at.Add(500 * time.Millisecond)}}, at.Add(500*time.Millisecond)); err != nil {
			t.Fatalf("LimitGive: %v", err)
		}
		if g := take(at.Add(1200*time.Millisecond), 10); g.N != 1 {
			t.Fatalf("take a period after the take, before a period after the starts = %+v; want the 1 unused token", g)
		}
		if g := take(at.Add(1600*time.Millisecond), 10); g.N != 4 {
			t.Fatalf("take a period after the starts = %+v; want their 4 tokens back", g)
		}
		// Jobs that started more than a period after their take (they
		// waited for a worker): their starts count from then, though the
		// take's own entry is gone.
		late := t0.Add(10 * time.Second)
		if g := take(late, 5); g.N != 5 {
			t.Fatalf("take of a full bucket = %+v; want 5", g)
		}
		started := late.Add(3 * time.Second)
		for range 5 { // one job at a time, as single starts are moved
			if err := l.LimitGive(ctx, "p", []store.LimitGive{{Scope: sc, At: late, Used: 1, StartedAt: started}}, started); err != nil {
				t.Fatalf("LimitGive: %v", err)
			}
		}
		if g := take(started.Add(500*time.Millisecond), 10); g.N != 0 {
			t.Fatalf("take half a period after 5 late starts = %+v; want none", g)
		}
		if g := take(started.Add(1100*time.Millisecond), 10); g.N != 5 {
			t.Fatalf("take a period after the late starts = %+v; want 5", g)
		}
	})
	t.Run("ConcurrentTakes", func(t *testing.T) {
		t.Parallel()
		l := open(t)
		ctx := t.Context()
		var mu sync.Mutex
		total := 0
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				owner := string(rune('a' + i))
				for range 5 {
					g, err := l.LimitTake(ctx, owner, []store.LimitTake{{Scope: store.TaskScope("t.C"), Rule: conc, Want: 1}}, t0, t0.Add(time.Minute))
					if err != nil {
						t.Errorf("LimitTake: %v", err)
						return
					}
					mu.Lock()
					total += g[0].N
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if total != conc.Concurrency {
			t.Fatalf("concurrent takes granted %d slots; want exactly %d", total, conc.Concurrency)
		}
	})
	t.Run("QueueRules", func(t *testing.T) {
		t.Parallel()
		l := open(t)
		ctx := t.Context()
		sc := store.QueueScope("emails")
		g, err := l.LimitTake(ctx, "p", []store.LimitTake{{Scope: sc, Want: 7}}, t0, t0.Add(time.Minute))
		if err != nil || g[0].N != 7 {
			t.Fatalf("take of a queue without limits = %+v, %v; want all 7", g, err)
		}
		if err := l.SetQueueLimits(ctx, "emails", store.LimitRule{Concurrency: 2}, t0); err != nil {
			t.Fatalf("SetQueueLimits: %v", err)
		}
		rules, err := l.QueueLimits(ctx)
		if err != nil || rules["emails"] != (store.LimitRule{Concurrency: 2}) {
			t.Fatalf("QueueLimits = %v, %v; want emails: concurrency 2", rules, err)
		}
		// The caller's rule is ignored for a queue: the stored one applies.
		g, err = l.LimitTake(ctx, "p", []store.LimitTake{{Scope: sc, Rule: conc, Want: 7}}, t0, t0.Add(time.Minute))
		if err != nil || g[0].N != 2 {
			t.Fatalf("take under the stored rule = %+v, %v; want 2", g, err)
		}
		if err := l.SetQueueLimits(ctx, "emails", store.LimitRule{Rate: 3}, t0); !errors.Is(err, store.ErrInvalidLimit) {
			t.Fatalf("SetQueueLimits with a rate and no period = %v; want ErrInvalidLimit", err)
		}
		if err := l.SetQueueLimits(ctx, "Bad Name", store.LimitRule{Concurrency: 1}, t0); !errors.Is(err, store.ErrInvalidQueue) {
			t.Fatalf("SetQueueLimits of a bad name = %v; want ErrInvalidQueue", err)
		}
		if err := l.SetQueueLimits(ctx, "emails", store.LimitRule{}, t0); err != nil {
			t.Fatalf("SetQueueLimits(zero): %v", err)
		}
		if rules, err := l.QueueLimits(ctx); err != nil || len(rules) != 0 {
			t.Fatalf("QueueLimits after removing = %v, %v; want none", rules, err)
		}
	})
}
