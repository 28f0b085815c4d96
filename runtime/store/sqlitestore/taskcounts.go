package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// sqlTaskBacklog and sqlWaitingCount read the partial indexes of pending
// (idx_qm_ready, idx_qm_claim_queue) and scheduled (idx_qm_due) jobs: kept
// finished rows are never read.
const (
	sqlTaskBacklog = `SELECT coalesce(task, ''), 'pending', count(*) FROM fila WHERE ` + sqlReadyDefault + ` GROUP BY 1
		UNION ALL SELECT coalesce(task, ''), 'pending', count(*) FROM fila WHERE ` + sqlReadyNamed + ` GROUP BY 1
		UNION ALL SELECT coalesce(task, ''), 'scheduled', count(*) FROM fila WHERE ` + settledScheduled + ` GROUP BY 1`
	sqlWaitingCount = `SELECT (SELECT count(*) FROM fila WHERE ` + sqlReadyDefault + `)
		+ (SELECT count(*) FROM fila WHERE ` + sqlReadyNamed + `)
		+ (SELECT count(*) FROM fila WHERE ` + settledScheduled + `)`
)

// TaskBacklog counts pending and scheduled jobs per task; see
// store.Store. It reads the claim and due indexes' rows only.
func (s *Store) TaskBacklog(ctx context.Context) (map[string]store.TaskBacklog, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	out := make(map[string]store.TaskBacklog)
	for _, sh := range s.shards {
		rows, err := sh.r.QueryContext(ctx, sqlTaskBacklog)
		if err != nil && sh.w == nil && strings.Contains(err.Error(), "no such column") {
			// A read-only look at a queue-max file never migrated: its
			// jobs have no task name.
			rows, err = sh.r.QueryContext(ctx, `SELECT '', status, count(*) FROM fila
				WHERE status IN ('pending', 'scheduled') GROUP BY 2`)
		}
		if err != nil {
			return nil, fmt.Errorf("shard %d: task backlog: %w", sh.idx, err)
		}
		for rows.Next() {
			var task, status string
			var n int64
			if err := rows.Scan(&task, &status, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("shard %d: task backlog: %w", sh.idx, err)
			}
			b := out[task]
			if status == string(store.StatusPending) {
				b.Pending += n
			} else {
				b.Scheduled += n
			}
			out[task] = b
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("shard %d: task backlog: %w", sh.idx, err)
		}
	}
	return out, nil
}

// CreatedAt returns the earliest shard_metadata.created_at; see
// store.Store.
func (s *Store) CreatedAt(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, store.ErrClosed
	}
	var best time.Time
	for _, sh := range s.shards {
		var at sql.NullString
		err := sh.r.QueryRowContext(ctx, `SELECT min(created_at) FROM shard_metadata`).Scan(&at)
		if err != nil {
			return time.Time{}, fmt.Errorf("shard %d: created at: %w", sh.idx, err)
		}
		if t := store.ParseTime(at.String); !t.IsZero() && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	return best, nil
}

// WaitingCount counts pending and scheduled jobs; see store.Store.
func (s *Store) WaitingCount(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	var total int64
	for _, sh := range s.shards {
		var n int64
		if err := sh.r.QueryRowContext(ctx, sqlWaitingCount).Scan(&n); err != nil {
			return 0, fmt.Errorf("shard %d: waiting count: %w", sh.idx, err)
		}
		total += n
	}
	return total, nil
}
