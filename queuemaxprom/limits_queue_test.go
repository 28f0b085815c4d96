package queuemaxprom

import (
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// TestCollector_QueueLimits: a queue's global limits are gauges with
// scope "queue".
func TestCollector_QueueLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{RefreshInterval: time.Nanosecond}, queuemax.Config{Shards: 1})
	if err := b.c.SetQueueLimits(b.ctx, "emails", queuemax.QueueLimits{Rate: queuemax.Rate{Limit: 50, Per: time.Second}, Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	limits := gather(t, b.reg, "queuemax_global_limit")
	use := gather(t, b.reg, "queuemax_global_limit_in_use")
	for key, want := range map[string]float64{"concurrency|emails||queue": 4, "rate|emails|1s|queue": 50} {
		if got := limits[key]; got == nil || got.GetGauge().GetValue() != want {
			t.Errorf("global_limit{limit|name|per|scope=%s} = %v, want %v (have %v)", key, got, want, limits)
		}
		if got := use[key]; got == nil || got.GetGauge().GetValue() != 0 {
			t.Errorf("global_limit_in_use{%s} = %v, want 0", key, got)
		}
	}
}
