package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// The circuit breakers: one row per task in {s}.breakers, read by every
// process at claim time and updated in one transaction per batch of
// outcomes (rows locked FOR UPDATE, in task order).

var _ store.BreakerStore = (*Store)(nil)

// migrationBreakers creates the breakers' table.
var migrationBreakers = []string{
	// The attempt whose failure said the job's dependency was failing:
	// a breaker's probe prefers such a job to one that failed on its own
	// input.
	`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS dep_attempt integer`,
	`CREATE TABLE IF NOT EXISTS {s}.breakers (
		task text PRIMARY KEY,
		state text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
		failures integer NOT NULL DEFAULT 0,
		opened_at timestamptz,
		open_until timestamptz,
		probe_owner text,
		probe_expires timestamptz,
		last_error text,
		updated_at timestamptz NOT NULL
	)`,
}

const breakerColumns = `task, state, failures, opened_at, open_until, probe_owner, probe_expires, last_error, updated_at`

func scanBreaker(r pgx.Row) (store.BreakerRow, error) {
	var b store.BreakerRow
	var failures int32
	var opened, until, expires, updated pgtype.Timestamptz
	var owner, lastErr pgtype.Text
	if err := r.Scan(&b.Task, &b.State, &failures, &opened, &until, &owner, &expires, &lastErr, &updated); err != nil {
		return b, err
	}
	b.Failures = int(failures)
	b.OpenedAt, b.Until, b.ProbeExpires, b.UpdatedAt = toTime(opened), toTime(until), toTime(expires), toTime(updated)
	b.ProbeOwner, b.LastError = owner.String, lastErr.String
	return b, nil
}

func tstz(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// BreakerList returns every stored breaker; see store.BreakerStore.
func (s *Store) BreakerList(ctx context.Context) ([]store.BreakerRow, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT `+breakerColumns+` FROM {s}.breakers ORDER BY task`)
	if err != nil {
		return nil, fmt.Errorf("queuemax: list circuit breakers: %w", err)
	}
	defer rows.Close()
	var out []store.BreakerRow
	for rows.Next() {
		b, err := scanBreaker(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// BreakerUpdate reads, changes and writes breakers in one transaction;
// see store.BreakerStore.
func (s *Store) BreakerUpdate(ctx context.Context, tasks []string, fn func(*store.BreakerRow) bool) ([]store.BreakerRow, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	schema := pgx.Identifier{s.schema}.Sanitize()
	q := func(sql string) string { return expand(sql, schema, s.host) }
	var out []store.BreakerRow
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = out[:0]
		// A row for each task first, so that FOR UPDATE has one to lock
		// (a closed row reads as no row).
		if _, err := tx.Exec(ctx, q(`INSERT INTO {s}.breakers (task, updated_at)
			SELECT t, now() FROM unnest($1::text[]) AS t ORDER BY t ON CONFLICT (task) DO NOTHING`), tasks); err != nil {
			return err
		}
		for _, task := range tasks {
			b, err := scanBreaker(tx.QueryRow(ctx, q(`SELECT `+breakerColumns+` FROM {s}.breakers WHERE task = $1 FOR UPDATE`), task))
			if err != nil {
				return err
			}
			if fn(&b) {
				if b.UpdatedAt.IsZero() {
					b.UpdatedAt = time.Now()
				}
				if _, err := tx.Exec(ctx, q(`UPDATE {s}.breakers SET state = $2, failures = $3, opened_at = $4, open_until = $5,
					probe_owner = $6, probe_expires = $7, last_error = $8, updated_at = $9 WHERE task = $1`),
					b.Task, b.State, int32(b.Failures), tstz(b.OpenedAt), tstz(b.Until), text(b.ProbeOwner),
					tstz(b.ProbeExpires), text(b.LastError), b.UpdatedAt); err != nil {
					return err
				}
			}
			out = append(out, b)
		}
		return nil
	})
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("queuemax: update circuit breakers: %w", err)
	}
	return out, nil
}

// sqlClaimProbe claims one job for a breaker's probe of tier $5: 0 a
// ready job that never ran, 1 one whose last attempt failed on a
// dependency, 2 any. $1 now, $2 unused but typed, $3 worker, $4 lease, $6
// the task names (NULL: any), $7 the queues (NULL: any).
var sqlClaimProbe = claimSet + `
	WHERE j.id = (SELECT id FROM {s}.jobs WHERE (status = 'pending' OR status = 'scheduled' AND next_retry_at <= @now)
		AND $2::integer > 0
		AND CASE $5::integer WHEN 0 THEN attempts = 0 WHEN 1 THEN dep_attempt = attempts ELSE true END
		AND ($6::text[] IS NULL OR coalesce(task, '') = ANY($6::text[]))
		AND ($7::text[] IS NULL OR queue = ANY($7::text[]))` + sqlNotPaused + `
		ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED)
	RETURNING ` + claimColumns

// ClaimProbe claims one job for a half-open breaker's probe; see
// store.BreakerStore. A job that never ran is taken if there is one; it
// reads the task's ready rows (no index orders by attempts), once per
// breaker timeout, never on the hot path.
func (s *Store) ClaimProbe(ctx context.Context, p store.ClaimParams) ([]*store.Job, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	now := p.Now
	if now.IsZero() {
		now = hostNow()
	}
	var tasks, queues []string
	if len(p.Tasks) > 0 {
		tasks = p.Tasks
	}
	if p.Queues != nil {
		queues = []string{}
		for _, ql := range p.Queues {
			if ql.Max > 0 {
				queues = append(queues, store.QueueOf(ql.Queue))
			}
		}
	}
	p.Max = 1
	for tier := range int32(3) {
		lease := rand.Int64N(1<<62) + 1
		rows, err := s.query(ctx, sqlClaimProbe, now, 1, p.WorkerID, lease, tier, tasks, queues)
		if err != nil {
			s.lost(err)
			return nil, fmt.Errorf("queuemax: claim probe: %w", err)
		}
		jobs, err := scanClaimed(rows, p, lease)
		if err != nil {
			s.lost(err)
			return nil, fmt.Errorf("queuemax: claim probe: %w", err)
		}
		if len(jobs) > 0 {
			return jobs, nil
		}
	}
	return nil, nil
}

// MarkDependencyFailures records dependency failures on the jobs' rows in
// one statement; see store.BreakerStore.
func (s *Store) MarkDependencyFailures(ctx context.Context, marks []store.DependencyMark) error {
	if err := s.writable(); err != nil {
		return err
	}
	ids := make([]int64, len(marks))
	atts := make([]int32, len(marks))
	for i, m := range marks {
		ids[i], atts[i] = m.ID.Seq(), int32(m.Attempt)
	}
	if _, err := s.exec(ctx, `UPDATE {s}.jobs j SET dep_attempt = m.att
		FROM unnest($1::bigint[], $2::integer[]) AS m(id, att) WHERE j.id = m.id`, ids, atts); err != nil {
		s.lost(err)
		return fmt.Errorf("queuemax: mark dependency failures: %w", err)
	}
	return nil
}
