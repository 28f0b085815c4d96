package sqlitestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/queuemax/queuemax/runtime/store"
)

// JobCounts counts every task's jobs per shard and status, and its
// dead-letter rows; see store.Store. With no index on task (it would slow
// every insert) it reads each shard's whole queue table once, on the
// reader pool, without decoding payloads; callers cache it.
func (s *Store) JobCounts(ctx context.Context) ([]store.JobCount, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	var out []store.JobCount
	for _, sh := range s.shards {
		for _, q := range [][2]string{
			{`SELECT COALESCE(task, ''), status, count(*) FROM fila WHERE ` + notStaged + ` GROUP BY 1, 2`,
				`SELECT '', status, count(*) FROM fila WHERE ` + notStaged + ` GROUP BY 2`},
			{`SELECT COALESCE(task, ''), '', count(*) FROM dead_letter_queue GROUP BY 1`,
				`SELECT '', '', count(*) FROM dead_letter_queue`},
		} {
			rows, err := sh.r.QueryContext(ctx, q[0])
			if err != nil && sh.w == nil && strings.Contains(err.Error(), "no such column") {
				// A read-only look at a queue-max file never migrated:
				// its jobs have no task name.
				rows, err = sh.r.QueryContext(ctx, q[1])
			}
			if err != nil {
				return nil, fmt.Errorf("shard %d: job counts: %w", sh.idx, err)
			}
			for rows.Next() {
				tc := store.JobCount{Shard: sh.idx}
				var st string
				if err := rows.Scan(&tc.Task, &st, &tc.Count); err != nil {
					rows.Close()
					return nil, fmt.Errorf("shard %d: job counts: %w", sh.idx, err)
				}
				if tc.Count == 0 {
					continue // the fallback's count of an empty table
				}
				tc.Status = store.Status(st)
				out = append(out, tc)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("shard %d: job counts: %w", sh.idx, err)
			}
		}
	}
	return out, nil
}
