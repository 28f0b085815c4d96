package cli

import (
	"fmt"
	"strings"

	"github.com/queuemax/queuemax"
)

// globalLimitRows adds a row per global limit to stats' key-value table:
// its use over every process against the limit.
func globalLimitRows(kv *table, ls []queuemax.GlobalLimitInfo) {
	if len(ls) == 0 {
		return
	}
	kv.row("Global limits", fmt.Sprint(len(ls)))
	for _, g := range ls {
		var parts []string
		if g.Concurrency > 0 {
			parts = append(parts, fmt.Sprintf("running %d/%d", g.Running, g.Concurrency))
			if g.Slots > g.Running {
				parts = append(parts, fmt.Sprintf("%d slots held", g.Slots))
			}
		}
		if g.Rate > 0 {
			parts = append(parts, fmt.Sprintf("started %d/%d per %s", g.Started, g.Rate, g.Per))
		}
		name, use := "  "+g.Scope+" "+shortTask(g.Name), strings.Join(parts, ", ")
		if g.By != "" {
			name, use = name+" per "+g.By, fmt.Sprintf("%d keys in use, the busiest: %s", g.Keys, use)
		}
		kv.row(name, use)
	}
}
