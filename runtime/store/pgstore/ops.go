package pgstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

type insertItem = store.InsertParams

var _ store.CompleteClaimer = (*Store)(nil)

func text(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

func rawText(b []byte) pgtype.Text {
	if b == nil {
		return pgtype.Text{}
	}
	return pgtype.Text{String: string(b), Valid: true}
}

func toTime(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// nilIfEmpty returns nil for an empty slice, as Job.Tags reads a job
// without tags.
func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// retrySeconds converts a backoff base to the retry_delay column's whole
// seconds, rounding up so that a sub-second base is not stored as zero.
func retrySeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// counterSlot picks one of the counter rows of a shard, so that concurrent
// acknowledgements rarely wait on the same row lock.
func counterSlot() int32 { return rand.Int32N(16) }

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
		int32(j.MaxAttempts), retrySeconds(j.RetryDelay), now, delay, rawText(j.Metadata), tmo,
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
	rows, err := p.s.pool.Query(ctx, q, args...)
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
		rd[i] = retrySeconds(j.RetryDelay)
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
	seqs, err := q.ids(ctx, stmt, shards, keys, tasks, payload, prio, maxa, rd, at, delay, meta, tmo, tags, queues)
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

// Claim claims ready jobs; see store.Store. With one shard it is one
// statement; with several, one per shard visited in p.Order.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]*store.Job, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	if p.Max <= 0 || p.Queues != nil && len(p.Queues) == 0 {
		return nil, nil
	}
	lease := rand.Int64N(1<<62) + 1
	if s.shards == 1 {
		return s.claimShard(ctx, p, lease, -1, p.Max)
	}
	order := p.Order
	if order == nil {
		order = rand.Perm(s.shards)
	}
	var out []*store.Job
	var firstErr error
	for _, sh := range order {
		if len(out) >= p.Max || p.Queues != nil && len(p.Queues) == 0 {
			break
		}
		if err := s.checkShard(sh); err != nil {
			return out, err
		}
		jobs, err := s.claimShard(ctx, p, lease, sh, p.Max-len(out))
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("shard %d: claim: %w", sh, err)
			}
			continue
		}
		out = append(out, jobs...)
		p.Queues = store.QueuesLeft(p.Queues, jobs)
	}
	if len(out) > 0 {
		return out, nil
	}
	return out, firstErr
}

func (s *Store) claimShard(ctx context.Context, p store.ClaimParams, lease int64, shard, want int) ([]*store.Job, error) {
	q, args := s.claimQuery(p, lease, shard, want)
	rows, err := s.claims.Query(ctx, q, args...)
	if err != nil {
		s.lost(err)
		return nil, err
	}
	jobs, err := scanClaimed(rows, p, lease)
	s.lost(err)
	return jobs, err
}

// claimQuery returns the claim statement for p and its arguments.
func (s *Store) claimQuery(p store.ClaimParams, lease int64, shard, want int) (string, []any) {
	now := p.Now
	if now.IsZero() {
		now = hostNow()
	}
	args := []any{now, want, p.WorkerID, lease}
	t, sh := 0, 0
	if len(p.Tasks) > 0 {
		t = 1
		args = append(args, p.Tasks)
	}
	if shard >= 0 {
		sh = 1
		args = append(args, int32(shard))
	}
	if len(p.Queues) > 0 {
		return s.q.claimQueues[t][sh], appendQueueArgs(args, p.Queues)
	}
	return s.q.claim[t][sh], args
}

// scanClaimed reads a claim's rows (claimColumns) and closes them. The
// jobs are allocated in one block.
func scanClaimed(rows pgx.Rows, p store.ClaimParams, lease int64) ([]*store.Job, error) {
	defer rows.Close()
	var jobs []*store.Job
	var block []store.Job
	for rows.Next() {
		var (
			id                           int64
			shardIdx, att, maxa, rd, snz int32
			prio                         int16
			task, lastErr, errType       pgtype.Text
			key                          pgtype.Int8
			created, hb, next            pgtype.Timestamptz
			payload, meta                []byte
			tmo                          pgtype.Int8
			tags                         []string
			queue                        pgtype.Text
		)
		if err := rows.Scan(&id, &shardIdx, &task, &payload, &prio, &att, &maxa, &rd, &lastErr, &errType, &key,
			&created, &hb, &meta, &next, &snz, &tmo, &tags, &queue); err != nil {
			return nil, err
		}
		if len(block) == 0 {
			block = make([]store.Job, min(max(p.Max-len(jobs), 1), 64))
		}
		j := &block[0]
		block = block[1:]
		j.ID = store.NewJobID(int(shardIdx), id)
		j.Shard = int(shardIdx)
		j.Task = task.String
		j.Payload = payload
		j.Status = store.StatusProcessing
		j.Priority = store.Priority(prio)
		j.Attempts, j.MaxAttempts = int(att), int(maxa)
		j.RetryDelay = time.Duration(rd) * time.Second
		j.LastError, j.ErrorType = lastErr.String, errType.String
		if key.Valid {
			k := key.Int64
			j.PartitionKey = &k
		}
		j.WorkerID = p.WorkerID
		j.Lease = lease
		j.CreatedAt = toTime(created)
		j.Heartbeat = toTime(hb)
		j.StartedAt = j.Heartbeat
		j.NextRetryAt = toTime(next)
		j.Metadata = meta
		j.Snoozes = int(snz)
		j.Queue = store.QueueOf(queue.String)
		j.Timeout = time.Duration(tmo.Int64) * time.Millisecond
		j.Tags = nilIfEmpty(tags)
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// RETURNING order is unspecified: restore priority, then FIFO.
	slices.SortFunc(jobs, func(a, b *store.Job) int {
		if a.Priority != b.Priority {
			return int(b.Priority - a.Priority)
		}
		return cmp.Compare(a.ID.Seq(), b.ID.Seq())
	})
	return jobs, nil
}

// leaseKey is one (row id, token) pair.
type leaseKey struct{ id, token int64 }

// matched turns the (id, lease) pairs a statement returned into one flag per
// item; a lease listed twice in one batch holds only for its first item.
func matched(rows pgx.Rows, leases []store.Lease) ([]bool, error) {
	got := make(map[leaseKey]bool)
	for rows.Next() {
		var k leaseKey
		if err := rows.Scan(&k.id, &k.token); err != nil {
			rows.Close()
			return nil, err
		}
		got[k] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ok := make([]bool, len(leases))
	for i, l := range leases {
		k := leaseKey{l.ID.Seq(), l.Token}
		if got[k] {
			ok[i] = true
			delete(got, k)
		}
	}
	return ok, nil
}

// itemErrors turns per-item flags (or one statement error) into the
// store's per-item errors.
func itemErrors(n int, ok []bool, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		switch {
		case err != nil:
			errs[i] = err
		case !ok[i]:
			errs[i] = store.ErrLeaseLost
		}
	}
	return errs
}

// errorsOf returns err once per item.
func errorsOf(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// byID returns the indexes of leases in ascending job order, each job and
// lease once: of items that repeat one, the first is kept and the others
// left out (matched then reports them lost, as a second acknowledgement
// of the same lease is on SQLite). Set-based statements take the rows'
// locks in the order of their arrays, so giving every statement its rows
// in one global order means two concurrent batches (a heartbeat and an
// acknowledgement of the same jobs) never deadlock; and an UPDATE ...
// FROM joined to two input rows for one job would apply either.
func byID(leases []store.Lease) []int {
	order := make([]int, len(leases))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(leases[a].ID.Seq(), leases[b].ID.Seq()) })
	out := order[:0]
	for k, i := range order {
		dup := false
		// Items of one job are adjacent, in input order.
		for b := k - 1; b >= 0 && leases[order[b]].ID.Seq() == leases[i].ID.Seq(); b-- {
			if leases[order[b]].Token == leases[i].Token {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, i)
		}
	}
	return out
}

// leaseArrays returns the row ids, tokens and worker IDs (NULL when empty)
// of leases, in order.
func leaseArrays(leases []store.Lease, order []int) (ids, tokens []int64, workers []pgtype.Text) {
	ids, tokens = make([]int64, len(order)), make([]int64, len(order))
	workers = make([]pgtype.Text, len(order))
	for k, i := range order {
		ids[k], tokens[k], workers[k] = leases[i].ID.Seq(), leases[i].Token, text(leases[i].WorkerID)
	}
	return ids, tokens, workers
}

// Complete records successful jobs in one statement; see store.Store. A
// single acknowledgement joins a group commit with concurrent ones.
func (s *Store) Complete(ctx context.Context, acks []store.CompleteParams) []error {
	if err := s.writable(); err != nil {
		return errorsOf(len(acks), err)
	}
	if len(acks) == 0 {
		return nil
	}
	var ok []bool
	var err error
	if len(acks) == 1 {
		ok, err = s.completes.do(ctx, acks)
	} else {
		ok, err = s.completeBatch(ctx, acks)
	}
	return itemErrors(len(acks), ok, err)
}

func (s *Store) completeBatch(ctx context.Context, acks []store.CompleteParams) ([]bool, error) {
	leases, args := s.completeArgs(acks)
	rows, err := s.pool.Query(ctx, s.q.complete, args...)
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("queuemax: complete jobs: %w", err)
	}
	ok, err := matched(rows, leases)
	s.lost(err)
	return ok, err
}

// completeArgs returns the leases of acks and the complete statement's
// arguments.
func (s *Store) completeArgs(acks []store.CompleteParams) ([]store.Lease, []any) {
	leases := make([]store.Lease, len(acks))
	for i, a := range acks {
		leases[i] = a.Lease
	}
	order := byID(leases)
	results := make([]pgtype.Text, len(order))
	at := make([]time.Time, len(order))
	keep := make([]bool, len(order))
	for k, i := range order {
		results[k] = rawText(acks[i].Result)
		keep[k] = acks[i].Keep
		at[k] = acks[i].Now
		if at[k].IsZero() {
			at[k] = hostNow()
		}
	}
	ids, tokens, workers := leaseArrays(leases, order)
	return leases, []any{ids, tokens, results, at, counterSlot(), workers, keep}
}

// CompleteClaim acknowledges acks and claims the next jobs in one
// transaction, sent as one pipelined batch: one round trip and one commit
// where Complete then Claim take two of each; see store.CompleteClaimer.
// With several logical shards it is Complete then Claim.
func (s *Store) CompleteClaim(ctx context.Context, acks []store.CompleteParams, p store.ClaimParams) ([]error, []*store.Job, error) {
	if err := s.writable(); err != nil {
		return errorsOf(len(acks), err), nil, err
	}
	if len(acks) == 0 || s.shards != 1 || p.Max <= 0 {
		var errs []error
		if len(acks) > 0 {
			errs = s.Complete(ctx, acks)
		}
		jobs, err := s.Claim(ctx, p)
		return errs, jobs, err
	}
	leases, args := s.completeArgs(acks)
	lease := rand.Int64N(1<<62) + 1
	cq, cargs := s.claimQuery(p, lease, -1, p.Max)
	b := &pgx.Batch{}
	b.Queue(s.q.complete, args...)
	b.Queue(cq, cargs...)
	br := s.claims.SendBatch(ctx, b)
	fail := func(err error) ([]error, []*store.Job, error) {
		br.Close()
		err = fmt.Errorf("queuemax: complete and claim: %w", err)
		return errorsOf(len(acks), err), nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return fail(err)
	}
	ok, err := matched(rows, leases)
	if err != nil {
		return fail(err)
	}
	rows, err = br.Query()
	if err != nil {
		return fail(err)
	}
	jobs, err := scanClaimed(rows, p, lease)
	if err != nil {
		return fail(err)
	}
	// The batch's one transaction commits at its end: only then do the
	// results hold.
	if err := br.Close(); err != nil {
		err = fmt.Errorf("queuemax: complete and claim: %w", err)
		return errorsOf(len(acks), err), nil, err
	}
	return itemErrors(len(acks), ok, nil), jobs, nil
}

// Fail records failed executions in one statement; see store.Store. A
// single failure joins a group commit with concurrent ones.
func (s *Store) Fail(ctx context.Context, fails []store.FailParams) []error {
	if err := s.writable(); err != nil {
		return errorsOf(len(fails), err)
	}
	if len(fails) == 0 {
		return nil
	}
	var ok []bool
	var err error
	if len(fails) == 1 {
		ok, err = s.failures.do(ctx, fails)
	} else {
		ok, err = s.failBatch(ctx, fails)
	}
	if err == nil && slices.Contains(ok, true) {
		s.wake(ctx)
	}
	return itemErrors(len(fails), ok, err)
}

func (s *Store) failBatch(ctx context.Context, fails []store.FailParams) ([]bool, error) {
	leases := make([]store.Lease, len(fails))
	for i, f := range fails {
		leases[i] = f.Lease
	}
	order := byID(leases)
	n := len(order)
	var (
		dead   = make([]bool, n)
		delay  = make([]int64, n)
		msg    = make([]string, n)
		etype  = make([]string, n)
		stack  = make([]pgtype.Text, n)
		at     = make([]time.Time, n)
		cancel = make([]bool, n)
		snooze = make([]bool, n)
	)
	for k, i := range order {
		f := fails[i]
		dead[k], cancel[k], snooze[k] = f.Dead, f.Cancelled, f.Snooze
		now := f.Now
		if now.IsZero() {
			now = hostNow()
		}
		at[k] = now
		if !f.Dead && !f.RetryAt.IsZero() {
			delay[k] = offset(f.RetryAt, now)
		}
		msg[k], etype[k], stack[k] = f.Error, f.ErrorType, text(f.Stack)
	}
	ids, tokens, workers := leaseArrays(leases, order)
	rows, err := s.pool.Query(ctx, s.q.fail, ids, tokens, dead, delay, msg, etype, stack, at, counterSlot(), workers, cancel, snooze)
	if err != nil {
		s.lost(err)
		return nil, fmt.Errorf("queuemax: fail jobs: %w", err)
	}
	ok, err := matched(rows, leases)
	s.lost(err)
	return ok, err
}

// Heartbeat renews heartbeats in one statement; see store.Store.
func (s *Store) Heartbeat(ctx context.Context, leases []store.Lease, now time.Time) []error {
	if err := s.writable(); err != nil {
		return errorsOf(len(leases), err)
	}
	if len(leases) == 0 {
		return nil
	}
	if now.IsZero() {
		now = hostNow()
	}
	ids, tokens, workers := leaseArrays(leases, byID(leases))
	rows, err := s.pool.Query(ctx, s.q.heartbeat, now, ids, tokens, workers)
	if err != nil {
		s.lost(err)
		return itemErrors(len(leases), nil, fmt.Errorf("queuemax: heartbeat: %w", err))
	}
	got := make(map[leaseKey]bool)
	for rows.Next() {
		var k leaseKey
		var cancel bool
		if err := rows.Scan(&k.id, &k.token, &cancel); err != nil {
			rows.Close()
			return itemErrors(len(leases), nil, err)
		}
		got[k] = cancel
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		s.lost(err)
		return itemErrors(len(leases), nil, fmt.Errorf("queuemax: heartbeat: %w", err))
	}
	errs := make([]error, len(leases))
	for i, l := range leases {
		cancel, ok := got[leaseKey{l.ID.Seq(), l.Token}]
		switch {
		case !ok:
			errs[i] = store.ErrLeaseLost
		case cancel:
			errs[i] = store.ErrCancelRequested
		}
	}
	return errs
}

// Cancel cancels a waiting job at once or flags a running one, in one
// statement; see store.Store.
func (s *Store) Cancel(ctx context.Context, id store.JobID, now time.Time) (store.Status, error) {
	if err := s.writable(); err != nil {
		return "", err
	}
	if now.IsZero() {
		now = hostNow()
	}
	var before, after pgtype.Text
	err := s.queryRow(ctx, `WITH cur AS (SELECT id, status FROM {s}.jobs WHERE id = $2 AND shard = $3 FOR UPDATE),
		u AS (UPDATE {s}.jobs j SET
				status = CASE WHEN cur.status = 'processing' THEN j.status ELSE 'cancelled' END,
				completed_at = CASE WHEN cur.status = 'processing' THEN j.completed_at ELSE @now END,
				next_retry_at = CASE WHEN cur.status = 'processing' THEN j.next_retry_at ELSE NULL END,
				cancel_requested = cur.status = 'processing'
			FROM cur WHERE j.id = cur.id AND cur.status IN ('pending', 'scheduled', 'processing')
			RETURNING j.status)
		SELECT (SELECT status FROM cur), (SELECT status FROM u)`, now, id.Seq(), int32(id.Shard())).Scan(&before, &after)
	switch {
	case err != nil:
		return "", fmt.Errorf("queuemax: cancel job %d: %w", id, err)
	case !before.Valid:
		return "", fmt.Errorf("%w: %d", store.ErrJobNotFound, id)
	case !after.Valid:
		return "", fmt.Errorf("%w: job %d is %s", store.ErrJobFinished, id, before.String)
	}
	return store.Status(after.String), nil
}

// Release returns running jobs to pending in one statement; see
// store.Store.
func (s *Store) Release(ctx context.Context, leases []store.Lease) []error {
	if err := s.writable(); err != nil {
		return errorsOf(len(leases), err)
	}
	if len(leases) == 0 {
		return nil
	}
	ids, tokens, workers := leaseArrays(leases, byID(leases))
	rows, err := s.pool.Query(ctx, s.q.release, ids, tokens, workers)
	if err != nil {
		return itemErrors(len(leases), nil, fmt.Errorf("queuemax: release: %w", err))
	}
	ok, err := matched(rows, leases)
	if err == nil && slices.Contains(ok, true) {
		s.wake(ctx)
	}
	return itemErrors(len(leases), ok, err)
}

// wake tells this process's waiters that jobs became ready; the triggers
// on jobs notify the other processes.
func (s *Store) wake(context.Context) { s.lis.bump() }
