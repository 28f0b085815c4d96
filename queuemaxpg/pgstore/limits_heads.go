package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuemax/queuemax/runtime/store"
)

// keyIndex names the partial index of task's pending jobs by the JSON
// text of their payload's key by (then claim order), and returns the
// statement that creates it and the key's expression as the index has
// it. The task is a literal in the predicate (the planner uses a partial
// index only for a query whose terms imply it), so each (task, key) pair
// has an index of its own, holding only that task's pending jobs.
func keyIndex(task, by string) (name, create, expr, where string) {
	h := fnv.New64a()
	h.Write([]byte(task + "\x00" + by))
	name = fmt.Sprintf("jobs_key_%016x", h.Sum64())
	expr = `((payload -> '` + by + `')::text)`
	where = `status = 'pending' AND task = '` + strings.ReplaceAll(task, "'", "''") + `'`
	create = `CREATE INDEX IF NOT EXISTS ` + name + ` ON {s}.jobs (` + expr + `, priority DESC, id) WHERE ` + where
	return name, create, expr, where
}

// keyHeadsSQL returns the statement that walks the keys with ready jobs:
// a recursive walk of the key index from the key after $6 that seeks to
// each next distinct key (one seek per key, however many jobs it holds),
// counting the keys not in skip ($4) and stopping once $5 of them were
// seen or after $7 keys; then each such key's first ready job in claim
// order (one more seek; jobs in a paused or filtered queue are passed
// over within that key only), at most $5 by priority then walk order;
// and last a row with a NULL id whose key is where the walk stopped. A
// payload without the key is the NULL key, first in the walk. Bound as
// $1 now (unused but typed), $2 the queue filter, $3 by, $4 skip, $5
// max, $6 after, $7 the steps.
func keyHeadsSQL(expr, where string) string {
	from := `FROM {s}.jobs WHERE ` + where
	return `WITH RECURSIVE s(key) AS (SELECT unnest($4::text[])),
		k(v, found, steps) AS (
			SELECT $6::text, 0, 0
			UNION ALL
			SELECT (SELECT ` + expr + ` ` + from + ` AND ` + expr + ` > k.v ORDER BY ` + expr + ` LIMIT 1),
				k.found + CASE WHEN k.steps > 0 AND $3::text || '=' || k.v NOT IN (SELECT key FROM s) THEN 1 ELSE 0 END,
				k.steps + 1
			FROM k WHERE k.v IS NOT NULL AND k.found < $5 AND k.steps < $7),
		h AS (
			SELECT x.id, x.shard, x.priority, x.queue, k.v, k.steps FROM k CROSS JOIN LATERAL (SELECT id, shard, priority, queue ` + from + `
				AND ` + expr + ` = k.v` + ready + `) x
			WHERE k.steps > 0 AND k.v IS NOT NULL AND $3::text || '=' || k.v NOT IN (SELECT key FROM s)
			UNION ALL
			SELECT * FROM (SELECT id, shard, priority, queue, NULL::text, 0 ` + from + ` AND ` + expr + ` IS NULL
				AND $6::text = '' AND $3::text || '=' NOT IN (SELECT key FROM s)` + ready + `) n)
		SELECT * FROM (SELECT h.id, h.shard, h.priority, h.queue, h.v FROM h ORDER BY h.priority DESC, h.steps LIMIT $5) heads
		UNION ALL
		SELECT NULL, 0, 0, NULL, (SELECT v FROM k ORDER BY steps DESC LIMIT 1)`
}

// ready is what keyHeadsSQL asks of a key's head beside the index's
// predicate, and its cut to the first in claim order.
const ready = ` AND $1::timestamptz IS NOT NULL AND ($2::text[] IS NULL OR queue = ANY($2::text[]))` + sqlNotPaused + `
			ORDER BY priority DESC, id LIMIT 1`

// KeyHeads walks the keys with ready jobs after after and returns the
// heads of those not in skip, in one statement; see store.KeyClaimer. The
// key index is created by the first call that needs it.
func (s *Store) KeyHeads(ctx context.Context, p store.ClaimParams, by, after string, skip []string, max int) ([]store.KeyCandidate, string, error) {
	if s.closed.Load() {
		return nil, "", store.ErrClosed
	}
	if len(p.Tasks) != 1 || max <= 0 || p.Queues != nil && len(p.Queues) == 0 {
		return nil, "", nil
	}
	if !store.CheckKeyName(by) {
		return nil, "", fmt.Errorf("queuemax: key heads: %q is not a payload key name", by)
	}
	name, create, expr, where := keyIndex(p.Tasks[0], by)
	var exists bool
	if err := s.queryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{s.schema, name}.Sanitize()).Scan(&exists); err != nil {
		s.lost(err)
		return nil, "", fmt.Errorf("queuemax: key index: %w", err)
	}
	if !exists {
		if s.ro {
			return nil, "", nil
		}
		if _, err := s.exec(ctx, create); err != nil {
			// Two processes creating it at once: one of them wins.
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "23505" && pe.Code != "42P07" {
				s.lost(err)
				return nil, "", fmt.Errorf("queuemax: create key index: %w", err)
			}
		}
	}
	now := p.Now
	if now.IsZero() {
		now = hostNow()
	}
	if skip == nil {
		skip = []string{}
	}
	rows, err := s.query(ctx, keyHeadsSQL(expr, where), now, queueNames(p.Queues), by, skip, max, after, store.KeyWalkSteps)
	if err != nil {
		s.lost(err)
		return nil, "", fmt.Errorf("queuemax: key heads: %w", err)
	}
	defer rows.Close()
	var out []store.KeyCandidate
	stop := ""
	for rows.Next() {
		var id pgtype.Int8
		var shard int32
		var prio int16
		var q, v pgtype.Text
		if err := rows.Scan(&id, &shard, &prio, &q, &v); err != nil {
			return nil, "", err
		}
		if !id.Valid { // where the walk stopped
			stop = v.String
			continue
		}
		out = append(out, store.KeyCandidate{ID: store.NewJobID(int(shard), id.Int64), Priority: int(prio), Queue: q.String,
			Value: v.String, Missing: !v.Valid})
	}
	return out, stop, rows.Err()
}
