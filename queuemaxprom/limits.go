package queuemaxprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queuemax/queuemax"
)

// collectLimits reports each global limit and its use (Stats.GlobalLimits,
// cached with the stats).
func (col *Collector) collectLimits(gauge func(*prometheus.Desc, float64, ...string), ls []queuemax.GlobalLimitInfo) {
	for _, g := range ls {
		if g.Concurrency > 0 {
			gauge(col.limitDesc, float64(g.Concurrency), g.Scope, g.Name, "concurrency", "")
			gauge(col.limitUseDesc, float64(g.Running), g.Scope, g.Name, "concurrency", "")
		}
		if g.Rate > 0 {
			gauge(col.limitDesc, float64(g.Rate), g.Scope, g.Name, "rate", g.Per)
			gauge(col.limitUseDesc, float64(g.Started), g.Scope, g.Name, "rate", g.Per)
		}
	}
}
