package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/queuemax/queuemax/runtime/store"
)

// keyIndex names the partial index of task's pending jobs by the JSON
// text of their payload's key by (then claim order), and returns the
// statement that creates it and the key's expression as the index has
// it. The task is a literal in the predicate (SQLite uses a partial index
// only for a query that repeats its terms), so each (task, key) pair has
// an index of its own, holding only that task's pending jobs.
func keyIndex(task, by string) (name, create, expr, where string) {
	h := fnv.New64a()
	h.Write([]byte(task + "\x00" + by))
	name = fmt.Sprintf("idx_qm_key_%016x", h.Sum64())
	expr = `payload -> '$."` + by + `"'`
	where = `status = 'pending' AND task = '` + strings.ReplaceAll(task, "'", "''") + `'`
	create = `CREATE INDEX IF NOT EXISTS ` + name + ` ON fila((` + expr + `), priority DESC, id) WHERE ` + where
	return name, create, expr, where
}

// keyHeadsSQL returns the statement that walks the keys with ready jobs:
// a recursive walk of the key index from the key after ?6 that seeks to
// each next distinct key (one seek per key, however many jobs it holds),
// counting the keys not in skip (?4) and stopping once ?5 of them were
// seen or after ?7 keys; then each such key's first ready job in claim
// order (one more seek; jobs not yet due or in a paused or filtered queue
// are passed over within that key only), at most ?5 by priority then
// walk order; and last a row with a NULL id whose key is where the walk
// stopped. A payload without the key is the NULL key, first in the walk.
// Bound as ?1 now, ?2 the queue filter, ?3 by, ?4 skip, ?5 max, ?6
// after, ?7 the steps.
func keyHeadsSQL(name, expr, where string) string {
	from := `FROM fila INDEXED BY ` + name + ` WHERE ` + where
	head := ` AND (next_retry_at IS NULL OR next_retry_at <= ?1) AND (?2 IS NULL OR queue IN (SELECT value FROM json_each(?2)))` +
		sqlNotPaused + `
			ORDER BY priority DESC, id LIMIT 1)`
	return `WITH RECURSIVE s(key) AS (SELECT value FROM json_each(?4)),
		k(v, found, steps) AS (
			SELECT ?6, 0, 0
			UNION ALL
			SELECT (SELECT ` + expr + ` ` + from + ` AND ` + expr + ` > k.v ORDER BY ` + expr + ` LIMIT 1),
				k.found + (k.steps > 0 AND ?3 || '=' || k.v NOT IN (SELECT key FROM s)), k.steps + 1
			FROM k WHERE k.v IS NOT NULL AND k.found < ?5 AND k.steps < ?7),
		h(v, steps, id) AS (
			SELECT v, steps, (SELECT id ` + from + ` AND ` + expr + ` = k.v` + head + ` FROM k
				WHERE steps > 0 AND v IS NOT NULL AND ?3 || '=' || v NOT IN (SELECT key FROM s)
			UNION ALL
			SELECT NULL, 0, (SELECT id ` + from + ` AND ` + expr + ` IS NULL` + head + `
				WHERE ?6 = '' AND ?3 || '=' NOT IN (SELECT key FROM s))
		SELECT * FROM (SELECT f.id, f.priority, f.queue, h.v FROM h JOIN fila f ON f.id = h.id
			ORDER BY f.priority DESC, h.steps LIMIT ?5)
		UNION ALL
		SELECT NULL, 0, NULL, (SELECT v FROM k ORDER BY steps DESC LIMIT 1)`
}

// KeyHeads walks the keys with ready jobs after after, shard by shard
// in p.Order, and returns the heads of those not in skip; see
// store.KeyClaimer. A shard's key index is created by the first call
// that needs it (on the writer; a read-only store without it has no
// heads to offer). The walk stops where the shards' walks stopped first.
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
	order := p.Order
	if order == nil {
		order = randomOrder(len(s.shards))
	}
	name, create, expr, where := keyIndex(p.Tasks[0], by)
	q := keyHeadsSQL(name, expr, where)
	now := store.FormatTime(p.Now)
	var out []store.KeyCandidate
	stop := ""
	for _, i := range order {
		sh, err := s.shard(i)
		if err != nil {
			return out, "", err
		}
		var n int
		if err := sh.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?1`, name).Scan(&n); err != nil {
			return out, "", fmt.Errorf("shard %d: key index: %w", i, err)
		}
		if n == 0 {
			if sh.w == nil {
				continue
			}
			if err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
				_, err := tx.ExecContext(ctx, create)
				return err
			}); err != nil {
				return out, "", fmt.Errorf("shard %d: create key index: %w", i, err)
			}
		}
		rows, err := sh.r.QueryContext(ctx, q, now, queueFilter(p.Queues), by, jsonStrings(skip), max, after, store.KeyWalkSteps)
		if err != nil {
			return out, "", fmt.Errorf("shard %d: key heads: %w", i, err)
		}
		for rows.Next() {
			var c store.KeyCandidate
			var id sql.NullInt64
			var qn, v sql.NullString
			if err := rows.Scan(&id, &c.Priority, &qn, &v); err != nil {
				rows.Close()
				return out, "", err
			}
			if !id.Valid { // where this shard's walk stopped
				if v.Valid && (stop == "" || v.String < stop) {
					stop = v.String
				}
				continue
			}
			c.ID, c.Queue, c.Value, c.Missing = store.NewJobID(i, id.Int64), qn.String, v.String, !v.Valid
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, "", err
		}
	}
	// One head per key over the shards (a key's first in claim order),
	// and only keys up to where the walk stopped on every shard.
	slices.SortStableFunc(out, func(a, b store.KeyCandidate) int { return cmp.Compare(b.Priority, a.Priority) })
	seen := make(map[string]bool, len(out))
	heads := out[:0]
	for _, c := range out {
		k := store.LimitKey(by, c.Value, c.Missing)
		if seen[k] || stop != "" && !c.Missing && c.Value > stop {
			continue
		}
		seen[k] = true
		heads = append(heads, c)
	}
	return heads[:min(len(heads), max)], stop, nil
}
