package pgstore

import (
	"fmt"
	"strings"
)

// Queue limits: a claim round claims a limited queue apart (capped by the
// starts its limit granted) and the rest with ClaimParams.SkipQueues, which
// leaves the limited queues out like paused ones.

// claimSkipSQL is claimSQL leaving out the queues of a text array bound
// after claimSQL's parameters.
func claimSkipSQL(tasks, shard bool) string {
	_, n := claimFilter(tasks, shard)
	return strings.ReplaceAll(claimSQL(tasks, shard), sqlNotPaused,
		sqlNotPaused+fmt.Sprintf(` AND queue <> ALL($%d::text[])`, n+1))
}
