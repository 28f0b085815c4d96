package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// BenchmarkClaimQueues measures one claim round of 32 jobs over four
// queues (8 each) on st, three ways: one claim with no caps ("Plain", the
// engine without Config.Queues), one claim with per-queue caps ("Capped",
// what the engine does), and one claim per queue ("PerQueue", the
// alternative). Each op claims 32 jobs; the jobs are inserted before the
// timer starts.
func BenchmarkClaimQueues(b *testing.B, open func(b *testing.B) store.Store) {
	queues := []string{"a", "b", "c", store.DefaultQueue}
	run := func(b *testing.B, claim func(st store.Store, now time.Time) (int, error)) {
		st := open(b)
		ctx := b.Context()
		now := time.Now()
		batch := make([]store.InsertParams, 0, 1000)
		flush := func() {
			if _, err := st.Insert(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
		for i := range b.N * 32 {
			batch = append(batch, store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1,
				Queue: queues[i%len(queues)], Now: now})
			if len(batch) == cap(batch) {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		b.ResetTimer()
		for range b.N {
			n, err := claim(st, now)
			if err != nil || n != 32 {
				b.Fatalf("claim = %d, %v; want 32", n, err)
			}
		}
	}
	p := func(qs ...store.QueueLimit) store.ClaimParams {
		return store.ClaimParams{WorkerID: "w", Max: 32, Order: []int{0}, Queues: qs}
	}
	b.Run("Plain", func(b *testing.B) {
		run(b, func(st store.Store, now time.Time) (int, error) {
			c := p()
			c.Now = now
			jobs, err := st.Claim(b.Context(), c)
			return len(jobs), err
		})
	})
	b.Run("Capped", func(b *testing.B) {
		var qs []store.QueueLimit
		for _, q := range queues {
			qs = append(qs, store.QueueLimit{Queue: q, Max: 8})
		}
		run(b, func(st store.Store, now time.Time) (int, error) {
			c := p(qs...)
			c.Now = now
			jobs, err := st.Claim(b.Context(), c)
			return len(jobs), err
		})
	})
	b.Run("PerQueue", func(b *testing.B) {
		run(b, func(st store.Store, now time.Time) (int, error) {
			n := 0
			for _, q := range queues {
				c := p(store.QueueLimit{Queue: q, Max: 8})
				c.Now = now
				jobs, err := st.Claim(b.Context(), c)
				if err != nil {
					return n, err
				}
				n += len(jobs)
			}
			return n, nil
		})
	})
}
