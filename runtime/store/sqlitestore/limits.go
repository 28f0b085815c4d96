package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Global limits live in shard 0's file only (qm_limits, qm_limit_rules):
// one place every process coordinates through, written in shard 0's write
// transactions. Claims take starts there first, then claim on any shard,
// then give back what they did not claim (a write to several files is not
// atomic, so a slot taken and never used expires with its owner's lease).

var _ store.Limiter = (*Store)(nil)

// limitsMigration creates the limit tables (see schema.go's migrations).
var limitsMigration = []string{
	`CREATE TABLE IF NOT EXISTS qm_limits (
		scope TEXT NOT NULL,
		key TEXT NOT NULL,
		state TEXT NOT NULL,
		updated_at TEXT NOT NULL,
		PRIMARY KEY (scope, key)
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS qm_limit_rules (
		scope TEXT PRIMARY KEY,
		rule TEXT NOT NULL,
		updated_at TEXT NOT NULL
	)`,
}

func (s *Store) limitShard() (*shardDB, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if s.shards[0].w == nil {
		return nil, store.ErrReadOnly
	}
	return s.shards[0], nil
}

// limitUpdate runs fn on the state rows of keys inside one shard-0 write
// transaction and writes back the changed ones.
func (s *Store) limitUpdate(ctx context.Context, keys []store.ScopeKey, now time.Time,
	fn func(tx *sql.Tx, states []*store.LimitState) ([]bool, error)) error {
	sh, err := s.limitShard()
	if err != nil {
		return err
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		// One read, one upsert and one delete for every key at once (a
		// claim of a task limited per key touches one row per key).
		states := make([]*store.LimitState, len(keys))
		byKey := make(map[store.ScopeKey]*store.LimitState, len(keys))
		for i, k := range keys {
			if st, ok := byKey[k]; ok {
				states[i] = st // the same row twice: one state
				continue
			}
			states[i] = new(store.LimitState)
			byKey[k] = states[i]
		}
		rows, err := tx.QueryContext(ctx, `SELECT scope, key, state FROM qm_limits
			WHERE (scope, key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`, scopeKeysJSON(keys, nil))
		if err != nil {
			return err
		}
		for rows.Next() {
			var k store.ScopeKey
			var col string
			if err := rows.Scan(&k.Scope, &k.Key, &col); err != nil {
				rows.Close()
				return err
			}
			if st, ok := byKey[k]; ok {
				*st = store.DecodeLimitState(col)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		changed, err := fn(tx, states)
		if err != nil {
			return err
		}
		var put, drop []store.ScopeKey
		var putStates []string
		done := make(map[store.ScopeKey]bool, len(keys))
		for i, k := range keys {
			if !changed[i] || done[k] {
				continue
			}
			done[k] = true
			if states[i].Empty() {
				drop = append(drop, k)
			} else {
				put = append(put, k)
				putStates = append(putStates, states[i].Encode())
			}
		}
		if len(drop) > 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM qm_limits
				WHERE (scope, key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`, scopeKeysJSON(drop, nil)); err != nil {
				return err
			}
		}
		if len(put) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO qm_limits (scope, key, state, updated_at)
				SELECT value ->> 0, value ->> 1, value ->> 2, ? FROM json_each(?) WHERE true
				ON CONFLICT (scope, key) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
				store.FormatTime(now), scopeKeysJSON(put, putStates)); err != nil {
				return err
			}
		}
		return nil
	})
}

// scopeKeysJSON encodes keys (with their states, if given) as a JSON array
// of [scope, key(, state)] arrays, for json_each.
func scopeKeysJSON(keys []store.ScopeKey, states []string) string {
	rows := make([][]string, len(keys))
	for i, k := range keys {
		rows[i] = []string{k.Scope, k.Key}
		if states != nil {
			rows[i] = append(rows[i], states[i])
		}
	}
	b, _ := json.Marshal(rows)
	return string(b)
}

// LimitTake takes starts; see store.Limiter.
func (s *Store) LimitTake(ctx context.Context, owner string, takes []store.LimitTake, now, expires time.Time) ([]store.LimitGrant, error) {
	if len(takes) == 0 {
		return nil, nil
	}
	keys := make([]store.ScopeKey, len(takes))
	for i, t := range takes {
		keys[i] = store.ScopeKey{Scope: t.Scope, Key: t.Key}
	}
	grants := make([]store.LimitGrant, len(takes))
	err := s.limitUpdate(ctx, keys, now, func(tx *sql.Tx, states []*store.LimitState) ([]bool, error) {
		changed := make([]bool, len(takes))
		for i, t := range takes {
			rule := t.Rule
			if strings.HasPrefix(t.Scope, "queue:") {
				var err error
				if rule, err = ruleOf(ctx, tx, t.Scope); err != nil {
					return nil, err
				}
			}
			if rule.IsZero() {
				grants[i] = store.LimitGrant{N: t.Want}
				changed[i] = !states[i].Empty()
				states[i].Log, states[i].Slots = nil, nil
				continue
			}
			grants[i] = states[i].Take(owner, rule, t.Want, now, expires)
			changed[i] = true
		}
		return changed, nil
	})
	if err != nil {
		return nil, err
	}
	return grants, nil
}

func ruleOf(ctx context.Context, tx *sql.Tx, scope string) (store.LimitRule, error) {
	var col string
	err := tx.QueryRowContext(ctx, `SELECT rule FROM qm_limit_rules WHERE scope = ?`, scope).Scan(&col)
	if errors.Is(err, sql.ErrNoRows) {
		return store.LimitRule{}, nil
	}
	var r store.LimitRule
	if err == nil {
		err = json.Unmarshal([]byte(col), &r)
	}
	return r, err
}

// LimitGive gives back slots and tokens; see store.Limiter.
func (s *Store) LimitGive(ctx context.Context, owner string, gives []store.LimitGive, now time.Time) error {
	if len(gives) == 0 {
		return nil
	}
	keys := make([]store.ScopeKey, len(gives))
	for i, g := range gives {
		keys[i] = store.ScopeKey{Scope: g.Scope, Key: g.Key}
	}
	return s.limitUpdate(ctx, keys, now, func(_ *sql.Tx, states []*store.LimitState) ([]bool, error) {
		changed := make([]bool, len(gives))
		for i, g := range gives {
			states[i].Give(owner, g, now)
			changed[i] = true
		}
		return changed, nil
	})
}

// LimitRefresh renews owner's slots; see store.Limiter.
func (s *Store) LimitRefresh(ctx context.Context, owner string, scopes []store.ScopeKey, now, expires time.Time) error {
	if len(scopes) == 0 {
		return nil
	}
	return s.limitUpdate(ctx, scopes, now, func(_ *sql.Tx, states []*store.LimitState) ([]bool, error) {
		changed := make([]bool, len(scopes))
		for i, st := range states {
			changed[i] = st.Refresh(owner, expires)
		}
		return changed, nil
	})
}

// LimitUsage reports every state row; see store.Limiter.
func (s *Store) LimitUsage(ctx context.Context, now time.Time) ([]store.LimitUsage, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.shards[0].r.QueryContext(ctx, `SELECT scope, key, state, updated_at FROM qm_limits ORDER BY scope, key`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil // a file not migrated (read-only, queue-max's)
		}
		return nil, err
	}
	defer rows.Close()
	var out []store.LimitUsage
	for rows.Next() {
		var u store.LimitUsage
		var col, at string
		if err := rows.Scan(&u.Scope, &u.Key, &col, &at); err != nil {
			return nil, err
		}
		st := store.DecodeLimitState(col)
		u.Rule = st.Rule
		u.Running, u.Started = st.Usage(now)
		u.UpdatedAt = store.ParseTime(at)
		out = append(out, u)
	}
	return out, rows.Err()
}

// SetQueueLimits stores a queue's rule; see store.Limiter.
func (s *Store) SetQueueLimits(ctx context.Context, queue string, r store.LimitRule, now time.Time) error {
	if err := store.CheckQueueName(queue); err != nil {
		return err
	}
	if err := r.Check(); err != nil {
		return err
	}
	sh, err := s.limitShard()
	if err != nil {
		return err
	}
	scope := store.QueueScope(queue)
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		if r.IsZero() {
			_, err := tx.ExecContext(ctx, `DELETE FROM qm_limit_rules WHERE scope = ?`, scope)
			return err
		}
		b, _ := json.Marshal(r)
		_, err := tx.ExecContext(ctx, `INSERT INTO qm_limit_rules (scope, rule, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (scope) DO UPDATE SET rule = excluded.rule, updated_at = excluded.updated_at`, scope, string(b), store.FormatTime(now))
		return err
	})
}

// QueueLimits returns the stored queue rules; see store.Limiter.
func (s *Store) QueueLimits(ctx context.Context) (map[string]store.LimitRule, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.shards[0].r.QueryContext(ctx, `SELECT scope, rule FROM qm_limit_rules WHERE scope LIKE 'queue:%'`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil
		}
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]store.LimitRule)
	for rows.Next() {
		var scope, col string
		if err := rows.Scan(&scope, &col); err != nil {
			return nil, err
		}
		var r store.LimitRule
		if err := json.Unmarshal([]byte(col), &r); err != nil {
			return nil, fmt.Errorf("queue limits of %s: %w", scope, err)
		}
		out[strings.TrimPrefix(scope, "queue:")] = r
	}
	return out, rows.Err()
}
