package sqlitestore_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// BenchmarkDrainRetention drains b.N jobs (claims of 100, one Complete per
// claim) with completed rows deleted (off) or kept (keep), then prunes the
// kept ones: the cost of completed-job retention per job, and the bytes
// each kept job adds to the shard file (file-B/job, after a checkpoint).
//
//	go test ./runtime/store/sqlitestore -run - -bench DrainRetention -benchtime 20000x
func BenchmarkDrainRetention(b *testing.B) {
	for _, keep := range []bool{false, true} {
		name := "off"
		if keep {
			name = "keep"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			st, err := sqlitestore.Open(b.Context(), sqlitestore.Options{Dir: dir, Shards: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ctx := b.Context()
			now := time.Now()
			payload := json.RawMessage(`{"to":"someone@example.com","subject":"a typical small payload","n":12345}`)
			ps := make([]store.InsertParams, 0, 1000)
			for i := 0; i < b.N; i += 1000 {
				ps = ps[:0]
				for k := i; k < min(i+1000, b.N); k++ {
					ps = append(ps, store.InsertParams{Task: "bench.Send", Payload: payload, MaxAttempts: 1, Now: now})
				}
				if _, err := st.Insert(ctx, ps); err != nil {
					b.Fatal(err)
				}
			}
			size := func() int64 {
				fi, err := os.Stat(filepath.Join(dir, "shard_0.db"))
				if err != nil {
					b.Fatal(err)
				}
				wal, _ := os.Stat(filepath.Join(dir, "shard_0.db-wal"))
				n := fi.Size()
				if wal != nil {
					n += wal.Size()
				}
				return n
			}
			before := size()
			b.ResetTimer()
			for done := 0; done < b.N; {
				jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 100, Now: now})
				if err != nil || len(jobs) == 0 {
					b.Fatalf("Claim: %d, %v", len(jobs), err)
				}
				acks := make([]store.CompleteParams, len(jobs))
				for i, j := range jobs {
					acks[i] = store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Keep: keep, Now: now}
				}
				for _, err := range st.Complete(ctx, acks) {
					if err != nil {
						b.Fatal(err)
					}
				}
				done += len(jobs)
			}
			b.StopTimer()
			b.ReportMetric(float64(size()-before)/float64(b.N), "file-B/job")
			// What the kept rows cost readers: Stats counts them by index,
			// JobCounts (the dashboard, the metrics) reads each row.
			start := time.Now()
			if _, err := st.Stats(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds()), "stats-µs")
			start = time.Now()
			if _, err := st.JobCounts(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds()), "jobcounts-µs")
			start = time.Now()
			res, err := st.Prune(ctx, store.PruneParams{CompletedBefore: now.Add(time.Second)})
			if err != nil {
				b.Fatal(err)
			}
			if keep && res.Jobs != b.N {
				b.Fatalf("Prune deleted %d, want %d", res.Jobs, b.N)
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "prune-ns/job")
		})
	}
}
