package sqlitestore

import (
	"fmt"

	"github.com/queuemax/queuemax/runtime/store"
)

// Queue limits: a claim round claims a limited queue apart (capped by the
// starts its limit granted) and the rest with ClaimParams.SkipQueues, which
// leaves the limited queues out like paused ones.

// The claimFor key's position field for the per-queue claim
// (claimMixedSQL): skipVariant leaves the queues of a list out,
// mixedVariant only the paused ones.
const (
	skipVariant  = -2
	mixedVariant = -3
)

// skipsQueues reports whether p's claim leaves queues out.
func skipsQueues(p store.ClaimParams) bool { return p.Queues == nil && len(p.SkipQueues) > 0 }

// claimVariant is claimFor's position field for p: the default queue's
// position among p.Queues; without p.Queues, skipVariant when p skips
// queues, mixedVariant when named queues have pending jobs (named, the
// probe's answer), and -1 (the default queue's claim, sqlClaim) when only
// the default queue has.
func claimVariant(p store.ClaimParams, named bool) int {
	switch {
	case p.Queues != nil:
		return defaultQueueAt(p.Queues)
	case skipsQueues(p):
		return skipVariant
	case named:
		return mixedVariant
	}
	return -1
}

// claimMixedSQL is the claim over every queue restricted to n task names,
// leaving out the paused queues and, with skip, the queues of a JSON array
// bound as ?n+5: up to ?4 ready jobs of each queue left in
// (perQueueSQL), merged in claim order. A paused or skipped queue costs
// one index seek however many jobs it holds; the plain claim (sqlClaim)
// would walk past them all when they come first in claim order.
func claimMixedSQL(n int, skip bool) string {
	keep := notPaused("$q")
	if skip {
		keep += fmt.Sprintf(` AND $q NOT IN (SELECT value FROM json_each(?%d))`, n+5)
	}
	cond := `
			AND (next_retry_at IS NULL OR next_retry_at <= ?2)` + taskFilterSQL(n)
	return sqlClaimSet + `
		WHERE id IN (SELECT id FROM (` + perQueueSQL(cond, keep, "?4") + `)
			ORDER BY priority DESC, id LIMIT ?4)
		RETURNING ` + claimColumns
}
