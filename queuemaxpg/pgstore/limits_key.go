package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuemax/queuemax/runtime/store"
)

var _ store.KeyClaimer = (*Store)(nil)

// sqlPeekKeys reads the first ready jobs of task $3 (queues $4, NULL:
// any) in claim order, with the JSON text of their payload's key $2: like
// claimSQL, the first pending ones through jobs_claim and the due
// scheduled ones through jobs_due, at most $5 in all, whose payloads
// alone are read.
const sqlPeekKeys = `SELECT id, shard, priority, queue, (payload -> $2::text)::text FROM {s}.jobs
	WHERE id = ANY(ARRAY(SELECT id FROM (
		SELECT id, priority FROM (SELECT id, priority FROM {s}.jobs WHERE status = 'pending'` + peekFilter + `
			ORDER BY priority DESC, id LIMIT $5) p
		UNION ALL
		SELECT id, priority FROM (SELECT id, priority FROM {s}.jobs WHERE status = 'scheduled' AND next_retry_at <= @now` + peekFilter + `
			ORDER BY next_retry_at LIMIT $5) d
	) c ORDER BY priority DESC, id LIMIT $5))
	ORDER BY priority DESC, id`

const peekFilter = ` AND coalesce(task, '') = $3 AND ($4::text[] IS NULL OR queue = ANY($4::text[]))` + sqlNotPaused

// sqlClaimIDs claims the jobs $5 still ready ($2 unused but typed).
var sqlClaimIDs = claimSet + `
	WHERE j.id = ANY($5::bigint[]) AND $2::integer > 0
		AND (j.status = 'pending' OR j.status = 'scheduled' AND j.next_retry_at <= @now)` + sqlNotPaused + `
	RETURNING ` + claimColumns

func queueNames(qs []store.QueueLimit) []string {
	if qs == nil {
		return nil
	}
	names := []string{}
	for _, q := range qs {
		if q.Max > 0 {
			names = append(names, store.QueueOf(q.Queue))
		}
	}
	return names
}

// PeekKeys reads up to max ready jobs of the task with their key's value
// in one statement; see store.KeyClaimer.
func (s *Store) PeekKeys(ctx context.Context, p store.ClaimParams, by string, max int) ([]store.KeyCandidate, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if len(p.Tasks) != 1 || max <= 0 || p.Queues != nil && len(p.Queues) == 0 {
		return nil, nil
	}
	now := p.Now
	if now.IsZero() {
		now = hostNow()
	}
	rows, err := s.query(ctx, sqlPeekKeys, now, by, p.Tasks[0], queueNames(p.Queues), max)
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("queuemax: peek keys: %w", err)
	}
	defer rows.Close()
	var out []store.KeyCandidate
	for rows.Next() {
		var id int64
		var shard int32
		var prio int16
		var q, v pgtype.Text
		if err := rows.Scan(&id, &shard, &prio, &q, &v); err != nil {
			return nil, err
		}
		out = append(out, store.KeyCandidate{ID: store.NewJobID(int(shard), id), Priority: int(prio), Queue: q.String,
			Value: v.String, Missing: !v.Valid})
	}
	return out, rows.Err()
}

// ClaimIDs claims the ids still ready in one statement; see
// store.KeyClaimer.
func (s *Store) ClaimIDs(ctx context.Context, p store.ClaimParams, ids []store.JobID) ([]*store.Job, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	now := p.Now
	if now.IsZero() {
		now = hostNow()
	}
	seqs := make([]int64, len(ids))
	for i, id := range ids {
		seqs[i] = id.Seq()
	}
	p.Max = len(ids)
	lease := rand.Int64N(1<<62) + 1
	rows, err := s.query(ctx, sqlClaimIDs, now, 1, p.WorkerID, lease, seqs)
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("queuemax: claim: %w", err)
	}
	jobs, err := scanClaimed(rows, p, lease)
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("queuemax: claim: %w", err)
	}
	return jobs, nil
}

// LimitSweep deletes keyed state rows of scopes not written in the age
// before now (the database's clock unless the store follows the hosts');
// see store.KeyClaimer.
func (s *Store) LimitSweep(ctx context.Context, scopes []string, now time.Time, age time.Duration) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if len(scopes) == 0 {
		return 0, nil
	}
	n, err := s.exec(ctx, `DELETE FROM {s}.limits WHERE scope = ANY($2::text[]) AND key <> ''
		AND updated_at < @now - $3::bigint`+us, now, scopes, age.Microseconds())
	if err != nil {
		s.lost(err)
		return 0, fmt.Errorf("queuemax: sweep limits: %w", err)
	}
	return n, nil
}
