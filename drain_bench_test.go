//go:build linux

package queuemax

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRunDrain drains b.N no-op jobs with the default Config on 8
// shards and reports the process CPU per job (getrusage) next to ns/op.
// go test -run '^$' -bench RunDrain -benchtime 20000x -cpuprofile cpu.out
func BenchmarkRunDrain(b *testing.B) {
	for _, cb := range []int{0, 100, 400} {
		b.Run(fmt.Sprintf("ClaimBatch=%d", cb), func(b *testing.B) { benchDrain(b, cb) })
	}
}

func benchDrain(b *testing.B, claimBatch int) {
	{
		var done atomic.Int64
		finished := make(chan struct{})
		want := int64(b.N)
		c, err := Open(context.Background(), Config{Dir: b.TempDir(), Shards: 8, Logger: slog.New(slog.DiscardHandler), ClaimBatch: claimBatch,
			Handlers: []Handler{{Name: "noop", Func: func(context.Context, *Job) (any, error) { return nil, nil }}},
			Hooks: Hooks{OnComplete: func(context.Context, *Job, any) {
				if done.Add(1) == want {
					close(finished)
				}
			}}})
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
		<-errc
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
		b.ReportMetric(float64(b.N)/d.Seconds(), "jobs/s")
	}
}

func rusage() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
