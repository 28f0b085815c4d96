package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// sqlNotPaused leaves out the jobs of paused queues. Every shard file holds
// the paused set (qm_queues), so the claim reads its own file's copy.
const sqlNotPaused = `
			AND queue NOT IN (SELECT name FROM qm_queues WHERE paused_at IS NOT NULL)`

// notPaused is sqlNotPaused for one queue name (an expression): tested
// once per queue, not per row.
func notPaused(q string) string {
	return q + ` NOT IN (SELECT name FROM qm_queues WHERE paused_at IS NOT NULL)`
}

// The claim indexes' predicates: every pending row is in exactly one of
// them. idx_qm_ready holds the default queue's ready jobs (most jobs) by
// claim order, idx_qm_claim_queue the named queues' by queue, then claim
// order. A statement that repeats one of these predicates literally is
// what lets SQLite use that partial index; one that says only
// status = 'pending' reads neither and scans the table.
//
// A statement that walks the default queue's jobs names idx_qm_ready
// (fromReady): in the queue-max layout idx_qm_pop (every pending row, for
// queue-max's own pop) matches the same predicate, and SQLite would walk
// it, stepping over the named queues' jobs.
const (
	fromReady       = `fila INDEXED BY idx_qm_ready`
	sqlDefaultQueue = `queue = '` + store.DefaultQueue + `'`
	sqlNamedQueue   = `queue <> '` + store.DefaultQueue + `'`
	sqlReadyDefault = `status = 'pending' AND ` + sqlDefaultQueue
	sqlReadyNamed   = `status = 'pending' AND ` + sqlNamedQueue
)

// perQueueSQL returns a select of (id, priority) of up to lim ready rows
// of each queue whose name keep accepts, those rows meeting cond (terms
// that start with AND, on fila's columns): the default queue's walk
// idx_qm_ready in claim order; the named queues with pending jobs are
// found by a recursive skip-scan of idx_qm_claim_queue (one seek from
// each queue to the next, however many jobs it holds), and each accepted
// one is walked in claim order up to lim. keep is a condition on the
// queue name written as the placeholder $q; it is tested once per queue
// (the default queue's in its LIMIT: SQLite would test a WHERE term
// without a column at every row), so a paused, capped or filtered-out
// queue's backlog is never read. The caller orders the union by priority
// DESC, id and cuts it to lim: that is the shard's claim order over every
// accepted queue. The cost is one seek per queue with pending jobs plus at
// most lim index entries per accepted queue, whatever the backlogs.
func perQueueSQL(cond, keep, lim string) string {
	k := func(q string) string { return strings.ReplaceAll(keep, "$q", q) }
	return `WITH RECURSIVE h(q) AS (
			SELECT (SELECT queue FROM fila WHERE ` + sqlReadyNamed + ` ORDER BY queue LIMIT 1)
			UNION ALL
			SELECT (SELECT queue FROM fila WHERE ` + sqlReadyNamed + ` AND queue > h.q ORDER BY queue LIMIT 1)
			FROM h WHERE h.q IS NOT NULL)
		SELECT id, priority FROM (SELECT id, priority FROM ` + fromReady + ` WHERE ` + sqlReadyDefault + cond + `
			ORDER BY priority DESC, id LIMIT CASE WHEN ` + k(`'`+store.DefaultQueue+`'`) + ` THEN ` + lim + ` ELSE 0 END)
		UNION ALL
		SELECT f.id, f.priority FROM h JOIN fila f ON f.id IN (SELECT id FROM fila
			WHERE ` + sqlReadyNamed + ` AND queue = h.q` + cond + ` ORDER BY priority DESC, id LIMIT ` + lim + `)
		WHERE h.q IS NOT NULL AND ` + k("h.q")
}

// claimQueuesSQL returns the claim statement for n task names and q
// queues, each queue capped, def the position of the default queue among
// them (-1: not among them): one branch per queue walks a claim index in
// order and stops at its cap, and the union is cut to ?4 by priority then
// id. Bound as ?1 worker, ?2 now, ?3 lease, ?4 max, ?5 … ?n+4 the tasks,
// then each queue's name and cap (see appendQueueArgs). A named queue's
// branch walks idx_qm_claim_queue, the default queue's idx_qm_ready (the
// literal predicates are what let SQLite use those partial indexes).
func claimQueuesSQL(n, q, def int) string {
	tasks := taskFilterSQL(n)
	branches := make([]string, q)
	for i := range branches {
		name, limit := n+5+2*i, n+6+2*i
		// queue = +?N, not queue = ?N: SQLite would compare ?N with
		// idx_qm_ready's queue = 'default' (to see whether that partial
		// index serves the branch) and then prepare the statement again
		// at every execution, which costs more than running it. The
		// default queue's branch names its queue by the literal only.
		from, ready := "fila", sqlReadyNamed+fmt.Sprintf(` AND queue = +?%d`, name)
		if i == def {
			from, ready = fromReady, sqlReadyDefault
		}
		// A paused queue's branch takes nothing, tested in its LIMIT,
		// once: as a WHERE term it would be tested at every row.
		branches[i] = fmt.Sprintf(`SELECT id, priority FROM (SELECT id, priority FROM %s
			WHERE %s AND (next_retry_at IS NULL OR next_retry_at <= ?2)%s
			ORDER BY priority DESC, id LIMIT CASE WHEN %s THEN ?%d ELSE 0 END)`, from, ready, tasks, notPaused(fmt.Sprintf("?%d", name)), limit)
	}
	return sqlClaimSet + `
		WHERE id IN (SELECT id FROM (` + strings.Join(branches, `
			UNION ALL `) + `) ORDER BY priority DESC, id LIMIT ?4)
		RETURNING ` + claimColumns
}

// defaultQueueAt returns the position of the default queue in qs, or -1.
func defaultQueueAt(qs []store.QueueLimit) int {
	for i, q := range qs {
		if store.QueueOf(q.Queue) == store.DefaultQueue {
			return i
		}
	}
	return -1
}

// queueCountsSQL counts the unfinished jobs per queue (column col) and
// status: one branch per status and claim index, each on its partial
// index, so that kept finished rows are never read.
func queueCountsSQL(col string) string {
	if col == "NULL" {
		// A queue-max file never migrated: no queue column, no claim
		// index of ours to keep to.
		return `SELECT NULL, 'pending', count(*) FROM fila WHERE status = 'pending'
		UNION ALL SELECT NULL, 'scheduled', count(*) FROM fila WHERE ` + settledScheduled + `
		UNION ALL SELECT NULL, 'processing', count(*) FROM fila WHERE status = 'processing'`
	}
	return `SELECT ` + col + `, 'pending', count(*) FROM fila WHERE ` + sqlReadyDefault + ` GROUP BY 1
		UNION ALL SELECT ` + col + `, 'pending', count(*) FROM fila WHERE ` + sqlReadyNamed + ` GROUP BY 1
		UNION ALL SELECT ` + col + `, 'scheduled', count(*) FROM fila WHERE ` + settledScheduled + ` GROUP BY 1
		UNION ALL SELECT ` + col + `, 'processing', count(*) FROM fila WHERE status = 'processing' GROUP BY 1`
}

// appendQueueArgs appends each queue's name and cap, as claimQueuesSQL
// binds them.
func appendQueueArgs(args []any, qs []store.QueueLimit) []any {
	for _, q := range qs {
		args = append(args, store.QueueOf(q.Queue), max(q.Max, 0))
	}
	return args
}

// QueuePause pauses a queue on every shard; see store.QueueAdmin. The
// shards are written one after the other, shard 0 first: if one fails,
// the error names it and a repeated call completes the pause.
func (s *Store) QueuePause(ctx context.Context, name string, now time.Time) error {
	return s.queueSet(ctx, name, `INSERT INTO qm_queues (name, paused_at, updated_at) VALUES (?1, ?2, ?2)
		ON CONFLICT (name) DO UPDATE SET paused_at = ?2, updated_at = ?2 WHERE paused_at IS NULL`, now)
}

// QueueResume resumes a queue on every shard; see store.QueueAdmin.
func (s *Store) QueueResume(ctx context.Context, name string, now time.Time) error {
	return s.queueSet(ctx, name, `UPDATE qm_queues SET paused_at = NULL, updated_at = ?2
		WHERE name = ?1 AND paused_at IS NOT NULL`, now)
}

func (s *Store) queueSet(ctx context.Context, name, q string, now time.Time) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if s.shards[0].w == nil {
		return store.ErrReadOnly
	}
	if err := store.CheckQueueName(name); err != nil {
		return err
	}
	_, err := s.eachShard(ctx, store.AllShards, func(ctx context.Context, tx *sql.Tx, _ *groupCounts, _ *shardDB) (int, error) {
		return affected(tx.ExecContext(ctx, q, name, store.FormatTime(now)))
	})
	return err
}

// QueueList lists queues with their waiting and running jobs; see
// store.QueueAdmin. The paused state is shard 0's.
func (s *Store) QueueList(ctx context.Context) ([]store.QueueState, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	byName := make(map[string]*store.QueueState)
	get := func(name string) *store.QueueState {
		name = store.QueueOf(name)
		q := byName[name]
		if q == nil {
			q = &store.QueueState{Name: name}
			byName[name] = q
		}
		return q
	}
	for _, sh := range s.shards {
		// A queue-max file opened read-only (not migrated) has no queue
		// column: all its jobs are in the default queue.
		col := "queue"
		if strings.Contains(sh.cols, "NULL AS queue") {
			col = "NULL"
		}
		rows, err := sh.r.QueryContext(ctx, queueCountsSQL(col))
		if err != nil {
			return nil, fmt.Errorf("shard %d: queue counts: %w", sh.idx, err)
		}
		for rows.Next() {
			var name sql.NullString
			var status string
			var n int64
			if err := rows.Scan(&name, &status, &n); err != nil {
				rows.Close()
				return nil, err
			}
			q := get(name.String)
			switch store.Status(status) {
			case store.StatusPending:
				q.Pending += n
			case store.StatusScheduled:
				q.Scheduled += n
			case store.StatusProcessing:
				q.Processing += n
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("shard %d: queue counts: %w", sh.idx, err)
		}
	}
	rows, err := s.shards[0].r.QueryContext(ctx, `SELECT name, paused_at, updated_at FROM qm_queues`)
	if err != nil && !strings.Contains(err.Error(), "no such table") {
		return nil, fmt.Errorf("shard 0: queues: %w", err)
	}
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var name, updated string
			var paused sql.NullString
			if err := rows.Scan(&name, &paused, &updated); err != nil {
				return nil, err
			}
			q := get(name)
			q.Paused = paused.Valid
			q.PausedAt = store.ParseTime(paused.String)
			q.UpdatedAt = store.ParseTime(updated)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]store.QueueState, 0, len(byName))
	for _, q := range byName {
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b store.QueueState) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
