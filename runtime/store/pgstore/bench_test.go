package pgstore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/pgstore"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

func BenchmarkInsertOne(b *testing.B) {
	st := open(b, pgstore.Options{})
	ctx := b.Context()
	for b.Loop() {
		if _, err := st.Insert(ctx, []store.InsertParams{job(time.Now())}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsertOneParallel(b *testing.B) {
	st := open(b, pgstore.Options{MaxConns: 16})
	ctx := b.Context()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.Insert(ctx, []store.InsertParams{job(time.Now())}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkClaimComplete drains no-op jobs: claim 100, acknowledge them in
// one call.
func BenchmarkClaimComplete(b *testing.B) {
	st := open(b, pgstore.Options{})
	ctx := b.Context()
	batch := make([]store.InsertParams, 1000)
	for i := range batch {
		batch[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: time.Now()}
	}
	for n := 0; n < b.N; n += len(batch) {
		if _, err := st.Insert(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	done := 0
	for done < b.N {
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: time.Now()})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		acks := make([]store.CompleteParams, len(jobs))
		for i, j := range jobs {
			acks[i] = store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Now: time.Now()}
		}
		for _, err := range st.Complete(ctx, acks) {
			if err != nil {
				b.Fatal(err)
			}
		}
		done += len(jobs)
	}
}

func BenchmarkClaimQueues(b *testing.B) {
	storetest.BenchmarkClaimQueues(b, func(b *testing.B) store.Store { return open(b, pgstore.Options{}) })
}
