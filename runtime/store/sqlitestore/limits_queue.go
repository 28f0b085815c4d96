package sqlitestore

import (
	"fmt"
	"strings"

	"github.com/queuemax/queuemax/runtime/store"
)

// Queue limits: a claim round claims a limited queue apart (capped by the
// starts its limit granted) and the rest with ClaimParams.SkipQueues, which
// leaves the limited queues out like paused ones.

// skipVariant is the claimFor key's position field for the claim that
// skips queues (no per-queue caps).
const skipVariant = -2

// skipsQueues reports whether p's claim leaves queues out.
func skipsQueues(p store.ClaimParams) bool { return p.Queues == nil && len(p.SkipQueues) > 0 }

// claimVariant is claimFor's position field for p: the default queue's
// position among p.Queues, or skipVariant.
func claimVariant(p store.ClaimParams) int {
	if skipsQueues(p) {
		return skipVariant
	}
	return defaultQueueAt(p.Queues)
}

// claimSkipSQL is the claim restricted to n task names that leaves out the
// queues of a JSON array bound as ?n+5.
func claimSkipSQL(n int) string {
	skip := fmt.Sprintf(`
			AND queue NOT IN (SELECT value FROM json_each(?%d))`, n+5)
	return strings.Replace(claimSQLFor(n), sqlNotPaused, sqlNotPaused+skip, 1)
}
