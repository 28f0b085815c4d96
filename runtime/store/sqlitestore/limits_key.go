package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

var _ store.KeyClaimer = (*Store)(nil)

// sqlPeekKeys reads the first ?5 ready rows of one task (?3) in claim
// order, under the claim's queue filter (?4, a JSON array; NULL: any
// queue), with their payload's value at path ?1: up to ?5 of each queue
// the filter keeps (perQueueSQL), so that a paused or filtered-out
// queue's backlog is never read.
var sqlPeekKeys = `SELECT id, priority, queue, payload -> ?1 FROM fila WHERE id IN (SELECT id FROM (` +
	perQueueSQL(`
			AND (next_retry_at IS NULL OR next_retry_at <= ?2) AND coalesce(task, '') = ?3`,
		`(?4 IS NULL OR $q IN (SELECT value FROM json_each(?4))) AND `+notPaused("$q"), "?5") + `)
		ORDER BY priority DESC, id LIMIT ?5)
	ORDER BY priority DESC, id`

func queueFilter(qs []store.QueueLimit) any {
	if qs == nil {
		return nil
	}
	var names []string
	for _, q := range qs {
		if q.Max > 0 {
			names = append(names, store.QueueOf(q.Queue))
		}
	}
	return jsonStrings(names)
}

// PeekKeys reads up to max ready jobs of the task with their key's
// value, shard by shard in p.Order, on the readers (a shard with due
// scheduled jobs promotes them first); see store.KeyClaimer. Only the
// rows read (at most max per shard, through the claim index) have their
// payload's key extracted.
func (s *Store) PeekKeys(ctx context.Context, p store.ClaimParams, by string, max int) ([]store.KeyCandidate, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if len(p.Tasks) != 1 || max <= 0 || p.Queues != nil && len(p.Queues) == 0 {
		return nil, nil
	}
	order := p.Order
	if order == nil {
		order = randomOrder(len(s.shards))
	}
	now := store.FormatTime(p.Now)
	path := `$."` + strings.ReplaceAll(by, `"`, `\"`) + `"`
	var out []store.KeyCandidate
	for _, i := range order {
		if len(out) >= max {
			break
		}
		sh, err := s.shard(i)
		if err != nil {
			return out, err
		}
		var pending, due, named bool
		if err := sh.stmts.hasReady.QueryRowContext(ctx, now).Scan(&pending, &due, &named); err != nil {
			return out, fmt.Errorf("shard %d: probe: %w", i, err)
		}
		if due && sh.w != nil {
			if err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
				_, err := tx.ExecContext(ctx, sqlPromote, now)
				return err
			}); err != nil {
				return out, fmt.Errorf("shard %d: promote: %w", i, err)
			}
		} else if !pending && !named {
			continue
		}
		rows, err := sh.r.QueryContext(ctx, sqlPeekKeys, path, now, p.Tasks[0], queueFilter(p.Queues), max-len(out))
		if err != nil {
			return out, fmt.Errorf("shard %d: peek: %w", i, err)
		}
		for rows.Next() {
			var c store.KeyCandidate
			var id int64
			var q, v sql.NullString
			if err := rows.Scan(&id, &c.Priority, &q, &v); err != nil {
				rows.Close()
				return out, err
			}
			c.ID, c.Queue, c.Value, c.Missing = store.NewJobID(i, id), q.String, v.String, !v.Valid
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, err
		}
	}
	slices.SortStableFunc(out, func(a, b store.KeyCandidate) int { return cmp.Compare(b.Priority, a.Priority) })
	return out, nil
}

// ClaimIDs claims the ids still ready, one statement per shard; see
// store.KeyClaimer.
func (s *Store) ClaimIDs(ctx context.Context, p store.ClaimParams, ids []store.JobID) ([]*store.Job, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	byShard := make(map[int][]int64)
	var order []int
	for _, id := range ids {
		if _, ok := byShard[id.Shard()]; !ok {
			order = append(order, id.Shard())
		}
		byShard[id.Shard()] = append(byShard[id.Shard()], id.Seq())
	}
	start := time.Now()
	var out []*store.Job
	for _, i := range order {
		sh, err := s.shard(i)
		if err != nil {
			return out, err
		}
		if sh.w == nil {
			return out, store.ErrReadOnly
		}
		seqs := byShard[i]
		list := make([]string, len(seqs))
		for k, q := range seqs {
			list[k] = fmt.Sprint(q)
		}
		lease := rand.Int64N(1<<62) + 1
		base := len(out)
		err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
			out = out[:base]
			now := store.FormatTime(stamp(p.Now, start))
			rows, err := tx.QueryContext(ctx, sqlClaimSet+` WHERE id IN (SELECT value FROM json_each(?4))
				AND status = 'pending' AND (next_retry_at IS NULL OR next_retry_at <= ?2)`+sqlNotPaused+`
				RETURNING `+claimColumns, p.WorkerID, now, lease, "["+strings.Join(list, ",")+"]")
			if err != nil {
				return err
			}
			defer rows.Close()
			c := claimScan{shard: sh.idx, worker: p.WorkerID, lease: lease, at: store.ParseTime(now)}
			for rows.Next() {
				j, err := c.scan(rows, len(seqs)-(len(out)-base))
				if err != nil {
					return err
				}
				out = append(out, j)
			}
			return rows.Err()
		})
		if err != nil {
			return out[:base], fmt.Errorf("shard %d: claim: %w", i, err)
		}
	}
	slices.SortStableFunc(out, func(a, b *store.Job) int { return cmp.Compare(b.Priority, a.Priority) })
	return out, nil
}

// LimitSweep deletes keyed state rows of scopes not written in the age
// before now; see store.KeyClaimer.
func (s *Store) LimitSweep(ctx context.Context, scopes []string, now time.Time, age time.Duration) (int, error) {
	if len(scopes) == 0 {
		return 0, nil
	}
	sh, err := s.limitShard()
	if err != nil {
		return 0, err
	}
	n := 0
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM qm_limits WHERE scope IN (SELECT value FROM json_each(?1))
			AND key != '' AND updated_at < ?2`, jsonStrings(scopes), store.FormatTime(now.Add(-age)))
		if err != nil {
			return err
		}
		m, _ := res.RowsAffected()
		n = int(m)
		return nil
	})
	return n, err
}
