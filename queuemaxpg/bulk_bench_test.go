package queuemaxpg_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/cputime"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg"
)

type bulkArgs struct{ N int }

// BenchmarkEnqueueManyTyped is the client's side of the bulk scenario
// (cmd/queuemax-bench -scenarios bulk): EnqueueMany of 1,000 jobs of a
// Define'd task per op, with the CPU this process spent per job (its
// client µs/job; the server waits are not in it), which a CPU profile of
// the benchmark breaks down.
func BenchmarkEnqueueManyTyped(b *testing.B) {
	ctx := b.Context()
	dsn := pgtest.DSN(b)
	st, err := queuemaxpg.Open(ctx, dsn, queuemaxpg.Options{Schema: pgtest.Schema(b, dsn)})
	if err != nil {
		b.Fatal(err)
	}
	h := queuemax.Define("bulk", queuemax.TaskOptions{}, func(context.Context, bulkArgs) error { return nil })
	c, err := queuemax.Open(ctx, queuemax.Config{Store: st, Handlers: []queuemax.Handler{h}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c0, ok := cputime.Process()
	jobs := 0
	for b.Loop() {
		ps := make([]queuemax.EnqueueParams, 1000)
		for i := range ps {
			ps[i] = queuemax.EnqueueParams{Task: "bulk", Payload: bulkArgs{N: jobs + i}}
		}
		if _, err := c.EnqueueMany(ctx, ps); err != nil {
			b.Fatal(err)
		}
		jobs += len(ps)
	}
	if c1, _ := cputime.Process(); ok {
		b.ReportMetric(float64(c1-c0)/float64(time.Microsecond)/float64(max(jobs, 1)), "client-µs/job")
	}
}
