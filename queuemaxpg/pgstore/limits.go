package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuemax/queuemax/runtime/store"
)

// Global limits: one row per scope and key in {s}.limits, read and
// written under its row lock in one transaction per take, give or
// refresh; queue rules in {s}.limit_rules. Times are the database's
// clock unless the store follows the hosts' clocks.

var _ store.Limiter = (*Store)(nil)

// limitsMigration creates the limit tables (see schema.go's migrations).
var limitsMigration = []string{
	`CREATE TABLE IF NOT EXISTS {s}.limits (
		scope text NOT NULL,
		key text NOT NULL,
		state text NOT NULL,
		updated_at timestamptz NOT NULL,
		PRIMARY KEY (scope, key)
	)`,
	`CREATE TABLE IF NOT EXISTS {s}.limit_rules (
		scope text PRIMARY KEY,
		rule text NOT NULL,
		updated_at timestamptz NOT NULL
	)`,
}

// limitUpdate locks the state rows of keys (in a fixed order, so that
// concurrent updates cannot deadlock), runs fn on them and writes back
// the changed ones, in one transaction. fn gets the clock's now and how
// far it is from the caller's.
func (s *Store) limitUpdate(ctx context.Context, keys []store.ScopeKey, now time.Time,
	fn func(tx pgx.Tx, now time.Time, skew time.Duration, states []*store.LimitState) ([]bool, error)) error {
	if err := s.writable(); err != nil {
		return err
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ka, kb := keys[order[a]], keys[order[b]]
		return ka.Scope < kb.Scope || ka.Scope == kb.Scope && ka.Key < kb.Key
	})
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		at := now
		if !s.host {
			if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&at); err != nil {
				return err
			}
		}
		skew := at.Sub(now)
		// One statement locks (creating if need be) every row, in key
		// order; one writes back the changed ones and one deletes the
		// empty ones, however many keys (a claim of a task limited per key
		// touches one row per key).
		states := make([]*store.LimitState, len(keys))
		byKey := make(map[store.ScopeKey]*store.LimitState, len(keys))
		var scopes, ks []string
		for _, i := range order {
			k := keys[i]
			if st, ok := byKey[k]; ok {
				states[i] = st // the same row twice: one state
				continue
			}
			states[i] = new(store.LimitState)
			byKey[k] = states[i]
			scopes, ks = append(scopes, k.Scope), append(ks, k.Key)
		}
		rows, err := tx.Query(ctx, s.sql(`INSERT INTO {s}.limits (scope, key, state, updated_at)
			SELECT u.scope, u.key, '', $3 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(scope, key, ord) ORDER BY u.ord
			ON CONFLICT (scope, key) DO UPDATE SET scope = excluded.scope RETURNING scope, key, state`), scopes, ks, at)
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
		changed, err := fn(tx, at, skew, states)
		if err != nil {
			return err
		}
		var dropS, dropK, putS, putK, putSt []string
		done := make(map[store.ScopeKey]bool, len(keys))
		for _, i := range order {
			k := keys[i]
			if done[k] {
				continue
			}
			switch {
			case states[i].Empty():
				done[k] = true
				dropS, dropK = append(dropS, k.Scope), append(dropK, k.Key)
			case changed[i]:
				done[k] = true
				putS, putK, putSt = append(putS, k.Scope), append(putK, k.Key), append(putSt, states[i].Encode())
			}
		}
		if len(dropS) > 0 {
			if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {s}.limits l USING unnest($1::text[], $2::text[]) AS u(scope, key)
				WHERE l.scope = u.scope AND l.key = u.key`), dropS, dropK); err != nil {
				return err
			}
		}
		if len(putS) > 0 {
			if _, err := tx.Exec(ctx, s.sql(`UPDATE {s}.limits l SET state = u.state, updated_at = $4
				FROM unnest($1::text[], $2::text[], $3::text[]) AS u(scope, key, state)
				WHERE l.scope = u.scope AND l.key = u.key`), putS, putK, putSt, at); err != nil {
				return err
			}
		}
		return nil
	})
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
	err := s.limitUpdate(ctx, keys, now, func(tx pgx.Tx, at time.Time, skew time.Duration, states []*store.LimitState) ([]bool, error) {
		changed := make([]bool, len(takes))
		for i, t := range takes {
			rule := t.Rule
			if strings.HasPrefix(t.Scope, "queue:") {
				var err error
				if rule, err = s.ruleOf(ctx, tx, t.Scope); err != nil {
					return nil, err
				}
			}
			if rule.IsZero() {
				grants[i] = store.LimitGrant{N: t.Want}
				states[i].Log, states[i].Slots = nil, nil
				continue
			}
			grants[i] = states[i].Take(owner, rule, t.Want, at, expires.Add(skew))
			if !grants[i].RetryAt.IsZero() {
				grants[i].RetryAt = grants[i].RetryAt.Add(-skew)
			}
			changed[i] = true
		}
		return changed, nil
	})
	if err != nil {
		return nil, err
	}
	return grants, nil
}

func (s *Store) ruleOf(ctx context.Context, tx pgx.Tx, scope string) (store.LimitRule, error) {
	var col string
	err := tx.QueryRow(ctx, s.sql(`SELECT rule FROM {s}.limit_rules WHERE scope = $1`), scope).Scan(&col)
	if errors.Is(err, pgx.ErrNoRows) {
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
	return s.limitUpdate(ctx, keys, now, func(_ pgx.Tx, at time.Time, skew time.Duration, states []*store.LimitState) ([]bool, error) {
		changed := make([]bool, len(gives))
		for i, g := range gives {
			if !g.StartedAt.IsZero() {
				g.StartedAt = g.StartedAt.Add(skew) // At is the store's clock already
			}
			states[i].Give(owner, g, at)
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
	return s.limitUpdate(ctx, scopes, now, func(_ pgx.Tx, _ time.Time, skew time.Duration, states []*store.LimitState) ([]bool, error) {
		changed := make([]bool, len(scopes))
		for i, st := range states {
			changed[i] = st.Refresh(owner, expires.Add(skew))
		}
		return changed, nil
	})
}

// LimitUsage reports every state row; see store.Limiter.
func (s *Store) LimitUsage(ctx context.Context, now time.Time) ([]store.LimitUsage, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	at := now
	if !s.host {
		if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&at); err != nil {
			return nil, err
		}
	}
	rows, err := s.pool.Query(ctx, s.sql(`SELECT scope, key, state, updated_at FROM {s}.limits ORDER BY scope, key`))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.LimitUsage
	for rows.Next() {
		var u store.LimitUsage
		var col string
		if err := rows.Scan(&u.Scope, &u.Key, &col, &u.UpdatedAt); err != nil {
			return nil, err
		}
		st := store.DecodeLimitState(col)
		u.Rule = st.Rule
		u.Running, u.Started = st.Usage(at)
		out = append(out, u)
	}
	return out, rows.Err()
}

// SetQueueLimits stores a queue's rule; see store.Limiter.
func (s *Store) SetQueueLimits(ctx context.Context, queue string, r store.LimitRule, now time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := store.CheckQueueName(queue); err != nil {
		return err
	}
	if err := r.Check(); err != nil {
		return err
	}
	scope := store.QueueScope(queue)
	if r.IsZero() {
		_, err := s.exec(ctx, `DELETE FROM {s}.limit_rules WHERE scope = $1`, scope)
		return err
	}
	if now.IsZero() {
		now = hostNow()
	}
	b, _ := json.Marshal(r)
	if _, err := s.exec(ctx, `INSERT INTO {s}.limit_rules (scope, rule, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (scope) DO UPDATE SET rule = excluded.rule, updated_at = excluded.updated_at`, scope, string(b), now); err != nil {
		return fmt.Errorf("queuemax: queue %q: %w", queue, err)
	}
	s.wake(ctx)
	return nil
}

// QueueLimits returns the stored queue rules; see store.Limiter.
func (s *Store) QueueLimits(ctx context.Context) (map[string]store.LimitRule, error) {
	rows, err := s.query(ctx, `SELECT scope, rule FROM {s}.limit_rules WHERE scope LIKE 'queue:%'`)
	if err != nil {
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
