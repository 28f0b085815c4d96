package queuemaxprom

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
)

// TestCollector_GlobalLimits: each global limit and its use over every
// process are gauges.
func TestCollector_GlobalLimits(t *testing.T) {
	t.Parallel()
	var holding atomic.Bool
	release := make(chan struct{})
	hs := []queuemax.Handler{queuemax.Define("t.G", queuemax.TaskOptions{GlobalConcurrency: 1,
		GlobalRateLimit: queuemax.Rate{Limit: 5, Per: time.Minute}}, func(context.Context, struct{}) error {
		holding.Store(true)
		<-release
		return nil
	})}
	b := setup(t, Options{RefreshInterval: time.Nanosecond}, queuemax.Config{Shards: 1, Handlers: hs, Workers: 2})
	for range 2 {
		if _, err := b.c.Enqueue(b.ctx, "t.G", struct{}{}, queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	stop := queuemaxtest.Run(t, b.c)
	defer stop()
	defer close(release)
	deadline := time.Now().Add(20 * time.Second)
	for !holding.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no job started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	limits := gather(t, b.reg, "queuemax_global_limit")
	use := gather(t, b.reg, "queuemax_global_limit_in_use")
	for key, want := range map[string]float64{"concurrency|t.G||task": 1, "rate|t.G|1m0s|task": 5} {
		if got := limits[key].GetGauge().GetValue(); got != want {
			t.Errorf("global_limit{limit|name|per|scope=%s} = %v, want %v (have %v)", key, got, want, limits)
		}
	}
	for key, want := range map[string]float64{"concurrency|t.G||task": 1, "rate|t.G|1m0s|task": 1} {
		if got := use[key].GetGauge().GetValue(); got != want {
			t.Errorf("global_limit_in_use{%s} = %v, want %v", key, got, want)
		}
	}
}
