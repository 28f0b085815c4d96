package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// Insert stores jobs; see store.Store. A single job joins a group commit
// with concurrent single inserts (one statement for the group); a batch is
// one statement, so it is stored all or nothing.
func (s *Store) Insert(ctx context.Context, jobs []store.InsertParams) ([]store.JobID, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if err := s.checkShard(j.Shard); err != nil {
			return nil, err
		}
	}
	if hasUnique(jobs) {
		return s.insertUnique(ctx, jobs)
	}
	switch len(jobs) {
	case 0:
		return nil, nil
	case 1:
		ids, err := s.inserts.do(ctx, jobs)
		if err == nil {
			s.lis.bump()
		}
		return ids, err
	}
	var ids []store.JobID
	var err error
	if copyable(jobs) {
		err = s.retryInsert(ctx, func() (err error) {
			ids, err = s.insertCopy(ctx, jobs)
			return err
		})
	} else {
		ids, err = s.insertBatch(ctx, jobs)
	}
	if err == nil {
		s.lis.bump()
	}
	return ids, err
}

// insertBatch writes jobs in one statement on the pool, notifying other
// processes or not as s.notifies decides.
func (s *Store) insertBatch(ctx context.Context, jobs []store.InsertParams) (ids []store.JobID, err error) {
	one, many := s.q.insertOne, s.q.insert
	loud := s.notifies.loud(time.Now())
	if !loud {
		one, many = s.q.insertOneQuiet, s.q.insertQuiet
	}
	err = s.retryInsert(ctx, func() (err error) {
		if len(jobs) == 1 {
			ids, err = insertOne(ctx, poolQuerier{s}, one, jobs[0])
		} else {
			ids, err = insertWith(ctx, poolQuerier{s}, many, jobs)
		}
		return err
	})
	if !loud || err != nil {
		// A quiet insert, even after an error (the statement may have
		// committed), or a notifying one that failed and so covers none
		// of the quiet inserts before it.
		s.notifies.quietDone()
	}
	return ids, err
}

// insertOne is insertWith for one job, with sqlInsertOne's scalar
// parameters (the same values in the same order).
func insertOne(ctx context.Context, q querier, stmt string, j store.InsertParams) ([]store.JobID, error) {
	seqs, err := q.ids(ctx, stmt, rowArgs(j)...)
	if err != nil {
		return nil, fmt.Errorf("queuemax: insert job: %w", err)
	}
	if len(seqs) != 1 {
		return nil, fmt.Errorf("queuemax: insert job: %d rows written for 1 job", len(seqs))
	}
	return []store.JobID{store.NewJobID(j.Shard, seqs[0])}, nil
}

// rowArgs returns one job's values as the scalar parameters $1–$13 of
// sqlInsertOne and sqlInsertUnique (the columns of sqlInsert's arrays, in
// the same order).
func rowArgs(j store.InsertParams, extra ...any) []any {
	var key pgtype.Int8
	if j.PartitionKey != nil {
		key = pgtype.Int8{Int64: *j.PartitionKey, Valid: true}
	}
	now := j.Now
	if now.IsZero() {
		now = hostNow()
	}
	var delay int64
	if j.RunAt.After(now) {
		delay = max(offset(j.RunAt, now), 1)
	}
	var tmo pgtype.Int8
	if j.Timeout > 0 {
		tmo = pgtype.Int8{Int64: max(1, j.Timeout.Milliseconds()), Valid: true}
	}
	return append([]any{int32(j.Shard), key, text(j.Task), string(j.Payload), int16(j.Priority),
		int32(j.MaxAttempts), retryMillis(j.RetryDelay), now, delay, rawText(j.Metadata), tmo,
		text(store.EncodeTags(j.Tags)), store.QueueOf(j.Queue)}, extra...)
}

// InsertTx stores jobs inside the caller's transaction, so that they exist
// if and only if it commits; see store.TxInserter. tx is a pgx.Tx or a
// *sql.Tx opened with the pgx stdlib driver on a database holding the
// store's schema.
func (s *Store) InsertTx(ctx context.Context, tx any, jobs []store.InsertParams) ([]store.JobID, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	var q querier
	switch t := tx.(type) {
	case pgx.Tx:
		q = pgxQuerier{t}
	case *sql.Tx:
		q = sqlQuerier{t}
	default:
		return nil, fmt.Errorf("queuemax: InsertTx: unsupported transaction type %T (want pgx.Tx, or *sql.Tx from the pgx stdlib driver)", tx)
	}
	for _, j := range jobs {
		if err := s.checkShard(j.Shard); err != nil {
			return nil, err
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	if hasUnique(jobs) {
		return s.insertMixed(ctx, q, jobs)
	}
	return insertWith(ctx, q, s.q.insert, jobs)
}

// querier runs a query returning int64 pairs or singles, over pgx or
// database/sql.
type querier interface {
	ids(ctx context.Context, sql string, args ...any) ([]int64, error)
}

type poolQuerier struct{ s *Store }

func (p poolQuerier) ids(ctx context.Context, q string, args ...any) ([]int64, error) {
	conn, err := p.s.pool.Acquire(ctx)
	if err != nil {
		return nil, &notSent{err}
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

type pgxQuerier struct{ tx pgx.Tx }

func (p pgxQuerier) ids(ctx context.Context, q string, args ...any) ([]int64, error) {
	rows, err := p.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

type sqlQuerier struct{ tx *sql.Tx }

func (p sqlQuerier) ids(ctx context.Context, q string, args ...any) ([]int64, error) {
	rows, err := p.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// insertWith writes jobs with one statement through q.
func insertWith(ctx context.Context, q querier, stmt string, jobs []store.InsertParams) ([]store.JobID, error) {
	n := len(jobs)
	seqs, err := q.ids(ctx, stmt, jobArrays(jobs)...)
	if err != nil {
		return nil, fmt.Errorf("queuemax: insert jobs: %w", err)
	}
	if len(seqs) != n {
		return nil, fmt.Errorf("queuemax: insert jobs: %d rows written for %d jobs", len(seqs), n)
	}
	// One statement takes its ids from the sequence in row order.
	slices.Sort(seqs)
	out := make([]store.JobID, n)
	for i, j := range jobs {
		out[i] = store.NewJobID(j.Shard, seqs[i])
	}
	return out, nil
}

// jobArrays returns jobs' values as sqlInsert's thirteen array
// parameters, in its order.
func jobArrays(jobs []store.InsertParams) []any {
	n := len(jobs)
	var (
		shards  = make([]int32, n)
		keys    = make([]pgtype.Int8, n)
		tasks   = make([]pgtype.Text, n)
		payload = make([]string, n)
		prio    = make([]int16, n)
		maxa    = make([]int32, n)
		rd      = make([]int32, n)
		at      = make([]time.Time, n)
		delay   = make([]int64, n)
		meta    = make([]pgtype.Text, n)
		tmo     = make([]pgtype.Int8, n)
		tags    = make([]pgtype.Text, n)
		queues  = make([]string, n)
	)
	for i, j := range jobs {
		shards[i] = int32(j.Shard)
		if j.PartitionKey != nil {
			keys[i] = pgtype.Int8{Int64: *j.PartitionKey, Valid: true}
		}
		tasks[i] = text(j.Task)
		payload[i] = string(j.Payload)
		prio[i] = int16(j.Priority)
		maxa[i] = int32(j.MaxAttempts)
		rd[i] = retryMillis(j.RetryDelay)
		now := j.Now
		if now.IsZero() {
			now = hostNow()
		}
		at[i] = now
		if j.RunAt.After(now) {
			delay[i] = max(offset(j.RunAt, now), 1)
		}
		meta[i] = rawText(j.Metadata)
		if j.Timeout > 0 {
			tmo[i] = pgtype.Int8{Int64: max(1, j.Timeout.Milliseconds()), Valid: true}
		}
		tags[i] = text(store.EncodeTags(j.Tags))
		queues[i] = store.QueueOf(j.Queue)
	}
	return []any{shards, keys, tasks, payload, prio, maxa, rd, at, delay, meta, tmo, tags, queues}
}
