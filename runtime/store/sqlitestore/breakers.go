package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// The circuit breakers live in shard 0's file only (qm_breakers), like the
// worker registry: each update is one transaction on one file, so it is
// atomic without spanning shards (WAL mode makes multi-file transactions
// non-atomic).

var _ store.BreakerStore = (*Store)(nil)

// migrationBreakers creates the breakers' table.
var migrationBreakers = []string{
	`CREATE TABLE IF NOT EXISTS qm_breakers (
		task TEXT PRIMARY KEY,
		state TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
		failures INTEGER NOT NULL DEFAULT 0,
		opened_at TEXT,
		open_until TEXT,
		probe_owner TEXT,
		probe_expires TEXT,
		last_error TEXT,
		updated_at TEXT NOT NULL
	)`,
}

const breakerColumns = `task, state, failures, opened_at, open_until, probe_owner, probe_expires, last_error, updated_at`

type breakerScanner interface{ Scan(dest ...any) error }

func scanBreaker(r breakerScanner) (store.BreakerRow, error) {
	var b store.BreakerRow
	var opened, until, owner, expires, lastErr sql.NullString
	var updated string
	if err := r.Scan(&b.Task, &b.State, &b.Failures, &opened, &until, &owner, &expires, &lastErr, &updated); err != nil {
		return b, err
	}
	b.OpenedAt, b.Until = parseNull(opened), parseNull(until)
	b.ProbeOwner, b.ProbeExpires = owner.String, parseNull(expires)
	b.LastError, b.UpdatedAt = lastErr.String, store.ParseTime(updated)
	return b, nil
}

func parseNull(s sql.NullString) time.Time {
	if !s.Valid || s.String == "" {
		return time.Time{}
	}
	return store.ParseTime(s.String)
}

func formatNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return store.FormatTime(t)
}

// BreakerList returns every stored breaker; see store.BreakerStore.
func (s *Store) BreakerList(ctx context.Context) ([]store.BreakerRow, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	sh, err := s.shard(0)
	if err != nil {
		return nil, err
	}
	rows, err := sh.r.QueryContext(ctx, `SELECT `+breakerColumns+` FROM qm_breakers ORDER BY task`)
	if err != nil {
		if sh.w == nil && isNoSuchTable(err) {
			return nil, nil // a read-only look at a directory never migrated
		}
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

// BreakerUpdate reads, changes and writes breakers in one transaction of
// shard 0; see store.BreakerStore.
func (s *Store) BreakerUpdate(ctx context.Context, tasks []string, fn func(*store.BreakerRow) bool) ([]store.BreakerRow, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	sh, err := s.shard(0)
	if err != nil {
		return nil, err
	}
	if sh.w == nil {
		return nil, store.ErrReadOnly
	}
	var out []store.BreakerRow
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		out = out[:0]
		for _, task := range tasks {
			b, err := scanBreaker(tx.QueryRowContext(ctx, `SELECT `+breakerColumns+` FROM qm_breakers WHERE task = ?1`, task))
			switch {
			case err == sql.ErrNoRows:
				b = store.BreakerRow{Task: task, State: store.BreakerClosed}
			case err != nil:
				return err
			}
			if fn(&b) {
				if b.UpdatedAt.IsZero() {
					b.UpdatedAt = time.Now()
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO qm_breakers (`+breakerColumns+`)
					VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
					ON CONFLICT (task) DO UPDATE SET state = ?2, failures = ?3, opened_at = ?4, open_until = ?5,
						probe_owner = ?6, probe_expires = ?7, last_error = ?8, updated_at = ?9`,
					b.Task, b.State, b.Failures, formatNull(b.OpenedAt), formatNull(b.Until), nullString(b.ProbeOwner),
					formatNull(b.ProbeExpires), nullString(b.LastError), store.FormatTime(b.UpdatedAt)); err != nil {
					return err
				}
			}
			out = append(out, b)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queuemax: update circuit breakers: %w", err)
	}
	return out, nil
}

// ClaimProbe claims one job for a half-open breaker's probe; see
// store.BreakerStore. Each shard in turn is asked for a ready job that
// never ran; only when no shard has one is a job that ran before taken.
// It walks the ready rows of the task (no index orders by attempts): a
// probe is claimed once per breaker timeout, never on the hot path.
func (s *Store) ClaimProbe(ctx context.Context, p store.ClaimParams) ([]*store.Job, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if s.shards[0].w == nil {
		return nil, store.ErrReadOnly
	}
	order := p.Order
	if order == nil {
		order = randomOrder(len(s.shards))
	}
	for _, tier := range []string{probeFresh, probeDependency, ""} {
		for _, i := range order {
			sh, err := s.shard(i)
			if err != nil {
				return nil, err
			}
			j, err := s.claimProbeShard(ctx, sh, p, tier)
			if err != nil {
				return nil, fmt.Errorf("shard %d: claim probe: %w", i, err)
			}
			if j != nil {
				return []*store.Job{j}, nil
			}
		}
	}
	return nil, nil
}

// The probe's preference tiers: a job that never ran, then one whose
// last attempt failed on a dependency (dep_attempt, written by
// MarkDependencyFailures, equals its attempts), then any.
const (
	probeFresh      = ` AND tentativas = 0`
	probeDependency = ` AND dep_attempt = tentativas`
)

func (s *Store) claimProbeShard(ctx context.Context, sh *shardDB, p store.ClaimParams, tier string) (*store.Job, error) {
	lease := rand.Int64N(1<<62) + 1
	start := time.Now()
	cond := ` AND (next_retry_at IS NULL OR next_retry_at <= ?2)` + tier
	keep := notPaused("$q")
	args := []any{p.WorkerID, nil, lease}
	if len(p.Tasks) > 0 {
		cond += ` AND coalesce(task, '') IN (SELECT value FROM json_each(?4))`
		args = append(args, jsonStrings(p.Tasks))
	}
	if p.Queues != nil {
		keep += ` AND $q IN (SELECT value FROM json_each(?5))`
		if len(p.Tasks) == 0 {
			args = append(args, "[]") // ?4 unused
		}
		var names []string
		for _, q := range p.Queues {
			if q.Max > 0 {
				names = append(names, store.QueueOf(q.Queue))
			}
		}
		args = append(args, jsonStrings(names))
	}
	var j *store.Job
	err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		j = nil
		now := store.FormatTime(stamp(p.Now, start))
		if _, err := tx.ExecContext(ctx, sqlPromote, now); err != nil {
			return err
		}
		args[1] = now
		// The first job in claim order of each queue, so that a paused
		// queue's backlog is never read (perQueueSQL).
		rows, err := tx.QueryContext(ctx, sqlClaimSet+` WHERE id = (SELECT id FROM (`+perQueueSQL(cond, keep, "1")+`)
			ORDER BY priority DESC, id LIMIT 1) RETURNING `+claimColumns, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		c := claimScan{shard: sh.idx, worker: p.WorkerID, lease: lease, at: store.ParseTime(now)}
		for rows.Next() {
			if j, err = c.scan(rows, 1); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return j, err
}

// MarkDependencyFailures records dependency failures on the jobs' rows,
// one transaction per shard; see store.BreakerStore.
func (s *Store) MarkDependencyFailures(ctx context.Context, marks []store.DependencyMark) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	byShard := make(map[int][]store.DependencyMark)
	for _, m := range marks {
		byShard[m.ID.Shard()] = append(byShard[m.ID.Shard()], m)
	}
	for i, ms := range byShard {
		sh, err := s.shard(i)
		if err != nil {
			return err
		}
		if sh.w == nil {
			return store.ErrReadOnly
		}
		if err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
			for _, m := range ms {
				if _, err := tx.ExecContext(ctx, `UPDATE fila SET dep_attempt = ?2 WHERE id = ?1`, m.ID.Seq(), m.Attempt); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("queuemax: mark dependency failures: shard %d: %w", i, err)
		}
	}
	return nil
}

// jsonStrings encodes names as a JSON array of strings.
func jsonStrings(names []string) string {
	if names == nil {
		names = []string{}
	}
	b, _ := json.Marshal(names)
	return string(b)
}
