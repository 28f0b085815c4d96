//go:build linux

package queuemax

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/internal/cputime"
)

// BenchmarkRunDrain drains b.N no-op jobs with Run (on 8 SQLite shards,
// and on PostgreSQL when the test server is there) with the default
// ClaimBatch and two fixed ones, and reports the process CPU per job
// (getrusage) and jobs/s of the drain alone:
//
//	go test -run '^$' -bench RunDrain -benchtime 20000x -cpuprofile cpu.out
func BenchmarkRunDrain(b *testing.B) {
	for _, st := range []string{"sqlite", "postgres"} {
		for _, cb := range []int{0, 100, 400} {
			b.Run(fmt.Sprintf("%s/ClaimBatch=%d", st, cb), func(b *testing.B) { benchDrain(b, st, cb) })
		}
	}
}

func benchDrain(b *testing.B, st string, claimBatch int) {
	cfg := Config{Dir: b.TempDir(), Shards: 8}
	if st == "postgres" {
		dsn := pgTestDSN(b)
		cfg = Config{Store: pgTestStore(b, dsn, pgTestSchema(b, dsn))}
	}
	var done atomic.Int64
	finished := make(chan struct{})
	want := int64(b.N)
	cfg.Logger, cfg.ClaimBatch = slog.New(slog.DiscardHandler), claimBatch
	cfg.Handlers = []Handler{{Name: "noop", Func: func(context.Context, *Job) (any, error) { return nil, nil }}}
	cfg.Hooks = Hooks{OnComplete: func(context.Context, *Job, any) {
		if done.Add(1) == want {
			close(finished)
		}
	}}
	c, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ps := make([]EnqueueParams, 0, 1000)
	for i := range b.N {
		ps = append(ps, EnqueueParams{Task: "noop", Payload: map[string]int{"n": i}})
		if len(ps) == cap(ps) || i == b.N-1 {
			if _, err := c.EnqueueMany(context.Background(), ps); err != nil {
				b.Fatal(err)
			}
			ps = ps[:0]
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	b.ResetTimer()
	cpu0 := rusage()
	start := time.Now()
	go func() { errc <- c.Run(ctx) }()
	<-finished
	d := time.Since(start)
	cpu := rusage() - cpu0
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
	b.ReportMetric(float64(b.N)/d.Seconds(), "jobs/s")
}

func rusage() time.Duration {
	d, _ := cputime.Process()
	return d
}

// BenchmarkRunIdle runs an idle Run (default Config, 8 SQLite shards) for
// b.N × 100ms after a second of settling and reports its CPU use as a
// percentage of one core.
func BenchmarkRunIdle(b *testing.B) {
	c, err := Open(context.Background(), Config{Dir: b.TempDir(), Shards: 8, Logger: slog.New(slog.DiscardHandler),
		Handlers: []Handler{{Name: "noop", Func: func(context.Context, *Job) (any, error) { return nil, nil }}}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	time.Sleep(time.Second) // settle into the idle wait (a benchmark, not a test)
	b.ResetTimer()
	cpu0, start := rusage(), time.Now()
	time.Sleep(time.Duration(b.N) * 100 * time.Millisecond)
	cpu, wall := rusage()-cpu0, time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(100*float64(cpu)/float64(wall), "%cpu")
}
