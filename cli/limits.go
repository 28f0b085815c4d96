package cli

import (
	"fmt"

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
		name, use := "  "+g.Scope+" "+shortTask(g.Name), g.Usage()
		if g.By != "" {
			name, use = name+" per "+g.By, fmt.Sprintf("%d keys in use, the busiest: %s", g.Keys, use)
		}
		kv.row(name, use)
	}
}
