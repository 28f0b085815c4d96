package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// JobCounts counts every task's jobs per shard and status, and its
// dead-letter rows, in one statement; see store.Store. It groups the whole
// jobs table (there is no index on task), so callers cache it.
func (s *Store) JobCounts(ctx context.Context) ([]store.JobCount, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT shard, coalesce(task, ''), status, count(*) FROM {s}.jobs GROUP BY 1, 2, 3
		UNION ALL
		SELECT shard, coalesce(task, ''), '', count(*) FROM {s}.dead_letters GROUP BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("queuemax: job counts: %w", err)
	}
	var out []store.JobCount
	var (
		sh     int32
		c      store.JobCount
		status string
	)
	_, err = pgx.ForEachRow(rows, []any{&sh, &c.Task, &status, &c.Count}, func() error {
		c.Shard, c.Status = int(sh), store.Status(status)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuemax: job counts: %w", err)
	}
	return out, nil
}

// TaskBacklog counts pending and scheduled jobs per task; see store.Store.
// Each branch's predicate is one partial index's (jobs_claim, jobs_due), so
// only waiting rows are read.
func (s *Store) TaskBacklog(ctx context.Context) (map[string]store.TaskBacklog, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT coalesce(task, ''), false, count(*) FROM {s}.jobs WHERE status = 'pending' GROUP BY 1
		UNION ALL
		SELECT coalesce(task, ''), true, count(*) FROM {s}.jobs WHERE status = 'scheduled' GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("queuemax: task backlog: %w", err)
	}
	out := make(map[string]store.TaskBacklog)
	var (
		task      string
		scheduled bool
		n         int64
	)
	_, err = pgx.ForEachRow(rows, []any{&task, &scheduled, &n}, func() error {
		b := out[task]
		if scheduled {
			b.Scheduled += n
		} else {
			b.Pending += n
		}
		out[task] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuemax: task backlog: %w", err)
	}
	return out, nil
}

// WaitingCount counts pending and scheduled jobs; see store.Store. Each
// count reads one partial index.
func (s *Store) WaitingCount(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	var n int64
	err := s.queryRow(ctx, `SELECT (SELECT count(*) FROM {s}.jobs WHERE status = 'pending')
		+ (SELECT count(*) FROM {s}.jobs WHERE status = 'scheduled')`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("queuemax: waiting count: %w", err)
	}
	return n, nil
}

// CreatedAt returns when the schema's first migration was applied (when
// the queue was created); see store.Store.
func (s *Store) CreatedAt(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, store.ErrClosed
	}
	var at pgtype.Timestamptz
	if err := s.queryRow(ctx, `SELECT min(applied_at) FROM {s}.schema_version`).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("queuemax: created at: %w", err)
	}
	return toTime(at), nil
}
