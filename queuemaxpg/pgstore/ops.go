package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

type insertItem = store.InsertParams

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

// retryMillis converts a backoff base to the retry_delay column's
// milliseconds (schema version 16), rounding up so that a sub-millisecond
// base is not stored as zero, and capped at the column's range.
func retryMillis(d time.Duration) int32 {
	return int32(min((d+time.Millisecond-1)/time.Millisecond, math.MaxInt32))
}

// counterSlot picks one of the counter rows of a shard, so that concurrent
// acknowledgements rarely wait on the same row lock.
func counterSlot() int32 { return rand.Int32N(16) }

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
	if p.Queues == nil && len(p.SkipQueues) > 0 {
		return s.q.claimSkip[t][sh], append(args, p.SkipQueues)
	}
	return s.q.claim[t][sh], args
}

// scanClaimed reads a claim's rows (claimColumns) and closes them. The
// jobs are allocated in one block.
func scanClaimed(rows pgx.Rows, p store.ClaimParams, lease int64) ([]*store.Job, error) {
	defer rows.Close()
	var jobs []*store.Job
	var block []store.Job
	sc := newJobScan(true)
	for rows.Next() {
		if err := sc.scan(rows); err != nil {
			return nil, err
		}
		if len(block) == 0 {
			block = make([]store.Job, min(max(p.Max-len(jobs), 1), 64))
		}
		j := &block[0]
		block = block[1:]
		sc.row.Status = string(store.StatusProcessing)
		sc.row.WorkerID = p.WorkerID
		sc.row.Lease = lease
		sc.row.StartedAt = sc.row.Heartbeat
		sc.row.Fill(j)
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
	rows, err := s.pool.Query(ctx, s.completeSQL(len(acks)), args...)
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
// where Complete then Claim take two of each. It is this store's own, not
// part of store.Store: the engine does not use it.
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
	b.Queue(s.completeSQL(len(acks)), args...)
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
