package sqlitestore

import (
	"context"
	"fmt"

	"github.com/queuemax/queuemax/runtime/store"
)

var _ store.TaskCounter = (*Store)(nil)

// AllTaskCounts counts every task's jobs per shard and status, and its
// dead-letter rows. It groups the job table, so it reads every row's task
// and status (not the payloads); callers cache it.
func (s *Store) AllTaskCounts(ctx context.Context) ([]store.TaskCount, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	var out []store.TaskCount
	for _, sh := range s.shards {
		for _, q := range []string{
			`SELECT COALESCE(task, ''), status, count(*) FROM fila GROUP BY 1, 2`,
			`SELECT COALESCE(task, ''), '', count(*) FROM dead_letter_queue GROUP BY 1`,
		} {
			rows, err := sh.r.QueryContext(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("shard %d: task counts: %w", sh.idx, err)
			}
			for rows.Next() {
				tc := store.TaskCount{Shard: sh.idx}
				var st string
				if err := rows.Scan(&tc.Task, &st, &tc.Count); err != nil {
					rows.Close()
					return nil, fmt.Errorf("shard %d: task counts: %w", sh.idx, err)
				}
				tc.Status = store.Status(st)
				out = append(out, tc)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("shard %d: task counts: %w", sh.idx, err)
			}
		}
	}
	return out, nil
}
