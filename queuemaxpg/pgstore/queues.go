package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// sqlNotPaused leaves out the jobs of paused queues.
const sqlNotPaused = ` AND queue NOT IN (SELECT name FROM {s}.queues WHERE paused_at IS NOT NULL)`

// claimQueuesSQL is claimSQL capped per queue, in one statement: for each
// (queue, cap) pair of the two arrays bound after claimSQL's parameters, a
// lateral subquery takes that queue's first ready jobs (walking
// jobs_claim_queue) and due scheduled ones, each up to the cap, and a
// window keeps the queue's cap of them; the union is cut to $2 by priority
// then id.
func claimQueuesSQL(tasks, shard bool) string {
	filter, n := claimFilter(tasks, shard)
	return claimSet + `
	WHERE j.id = ANY(ARRAY(SELECT id FROM (
		SELECT c.id, c.priority, q.cap, row_number() OVER (PARTITION BY q.ord ORDER BY c.priority DESC, c.id) AS rn
		FROM unnest($` + fmt.Sprint(n+1) + `::text[], $` + fmt.Sprint(n+2) + `::integer[]) WITH ORDINALITY AS q(name, cap, ord)
		CROSS JOIN LATERAL (
			SELECT id, priority FROM (SELECT id, priority FROM {s}.jobs WHERE status = 'pending' AND queue = q.name` + filter + `
				ORDER BY priority DESC, id LIMIT q.cap FOR UPDATE SKIP LOCKED) p
			UNION ALL
			SELECT id, priority FROM (SELECT id, priority FROM {s}.jobs WHERE status = 'scheduled' AND next_retry_at <= @now
				AND queue = q.name` + filter + `
				ORDER BY next_retry_at LIMIT q.cap FOR UPDATE SKIP LOCKED) d
		) c
	) cand WHERE rn <= cap ORDER BY priority DESC, id LIMIT $2))
	RETURNING ` + claimColumns
}

// appendQueueArgs appends the queue names and caps claimQueuesSQL binds.
func appendQueueArgs(args []any, qs []store.QueueLimit) []any {
	names := make([]string, len(qs))
	caps := make([]int32, len(qs))
	for i, q := range qs {
		names[i], caps[i] = store.QueueOf(q.Queue), int32(max(q.Max, 0))
	}
	return append(args, names, caps)
}

// QueuePause pauses a queue; see store.QueueAdmin.
func (s *Store) QueuePause(ctx context.Context, name string, now time.Time) error {
	return s.queueSet(ctx, name, `INSERT INTO {s}.queues (name, paused_at, updated_at) VALUES ($2, @now, @now)
		ON CONFLICT (name) DO UPDATE SET paused_at = @now, updated_at = @now WHERE {s}.queues.paused_at IS NULL`, now)
}

// QueueResume resumes a queue; see store.QueueAdmin.
func (s *Store) QueueResume(ctx context.Context, name string, now time.Time) error {
	return s.queueSet(ctx, name, `UPDATE {s}.queues SET paused_at = NULL, updated_at = @now
		WHERE name = $2 AND paused_at IS NOT NULL`, now)
}

func (s *Store) queueSet(ctx context.Context, name, q string, now time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := store.CheckQueueName(name); err != nil {
		return err
	}
	if now.IsZero() {
		now = hostNow()
	}
	if _, err := s.exec(ctx, q, now, name); err != nil {
		return fmt.Errorf("queuemax: queue %q: %w", name, err)
	}
	// Idle workers of every process claim again (a resumed queue's jobs
	// are ready); the notification is the one job inserts send.
	if _, err := s.exec(ctx, `SELECT pg_notify($1::text, '')`, s.schema+".jobs"); err != nil {
		return fmt.Errorf("queuemax: queue %q: notify: %w", name, err)
	}
	s.wake(ctx)
	return nil
}

// QueueList lists queues with their waiting and running jobs; see
// store.QueueAdmin.
func (s *Store) QueueList(ctx context.Context) ([]store.QueueState, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT coalesce(c.queue, q.name), coalesce(c.pending, 0), coalesce(c.scheduled, 0),
			coalesce(c.processing, 0), q.paused_at, q.updated_at
		FROM (SELECT queue, count(*) FILTER (WHERE status = 'pending') AS pending,
				count(*) FILTER (WHERE status = 'scheduled') AS scheduled,
				count(*) FILTER (WHERE status = 'processing') AS processing
			FROM {s}.jobs WHERE status IN ('pending', 'scheduled', 'processing') GROUP BY queue) c
		FULL JOIN {s}.queues q ON q.name = c.queue
		ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("queuemax: list queues: %w", err)
	}
	defer rows.Close()
	var out []store.QueueState
	for rows.Next() {
		var q store.QueueState
		var paused, updated pgtype.Timestamptz
		if err := rows.Scan(&q.Name, &q.Pending, &q.Scheduled, &q.Processing, &paused, &updated); err != nil {
			return nil, err
		}
		q.Paused = paused.Valid
		q.PausedAt, q.UpdatedAt = toTime(paused), toTime(updated)
		out = append(out, q)
	}
	return out, rows.Err()
}
