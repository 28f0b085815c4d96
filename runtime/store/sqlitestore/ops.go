package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

type scanner interface{ Scan(dest ...any) error }

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Claim claims ready jobs; see store.Store.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]*store.Job, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if s.shards[0].w == nil {
		return nil, store.ErrReadOnly
	}
	if p.Queues != nil && len(p.Queues) == 0 {
		return nil, nil // no queue may be claimed from
	}
	order := p.Order
	if order == nil {
		order = randomOrder(len(s.shards))
	}
	now := store.FormatTime(p.Now)
	start := time.Now()
	var out []*store.Job
	var firstErr error
	for _, i := range order {
		if len(out) >= p.Max || p.Queues != nil && len(p.Queues) == 0 {
			break
		}
		sh, err := s.shard(i)
		if err != nil {
			return out, err
		}
		// A shard is probed on a reader first: whether jobs of the
		// default queue are pending, whether scheduled ones are due (then
		// the claim promotes them first) and whether named queues have
		// pending jobs. Only when neither named queues' jobs are pending
		// nor due ones promoted does the claim take the default queue's
		// jobs alone (sqlClaim, the cheapest); otherwise it takes them
		// per queue (claimMixedSQL). A shard whose last claim filled its
		// batch is claimed from at once, promoting due jobs first, in the
		// form its last probe chose, and probed again once that probe is
		// fullProbeAge old. A job enqueued in a named queue after the
		// probe that chose the default queue's claim stays pending until
		// the next probe: the default queue's claim never reads it.
		promote, named := true, sh.named.Load()
		if !sh.full.Load() || time.Duration(time.Now().UnixNano()-sh.probed.Load()) > fullProbeAge {
			var pending bool
			if err := sh.stmts.hasReady.QueryRowContext(ctx, now).Scan(&pending, &promote, &named); err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("shard %d: probe: %w", i, err)
				}
				continue
			}
			sh.named.Store(named)
			sh.probed.Store(time.Now().UnixNano())
			if !pending && !named && !promote {
				continue
			}
			// Due jobs promoted by the claim may be named queues'.
			named = named || promote
		}
		want := p.Max - len(out)
		jobs, err := s.claimShard(ctx, sh, p, start, want, promote, named, out)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("shard %d: claim: %w", i, err)
			}
			continue
		}
		sh.full.Store(len(jobs)-len(out) == want)
		p.Queues = store.QueuesLeft(p.Queues, jobs[len(out):])
		out = jobs
	}
	if len(out) > 0 {
		return out, nil
	}
	return out, firstErr
}

// fullProbeAge is how old the last probe of a shard whose claims fill
// their batches may be before its next claim probes it again: a job of a
// named queue enqueued while the default queue's claim was chosen waits at
// most this long.
const fullProbeAge = 10 * time.Millisecond

// stamp returns the caller's time now, advanced by the real time elapsed
// since start: a claim or heartbeat that waited for the write lock records
// when it was written, not when it was asked for, so a slow commit under
// load cannot make a fresh claim look stuck to orphan recovery.
func stamp(now, start time.Time) time.Time { return now.Add(time.Since(start)) }

// claimShard claims up to want jobs of sh and appends them to out, in
// priority then FIFO order. With promote, due scheduled jobs are made
// pending first.
func (s *Store) claimShard(ctx context.Context, sh *shardDB, p store.ClaimParams, start time.Time, want int,
	promote, named bool, out []*store.Job) ([]*store.Job, error) {
	lease := rand.Int64N(1<<62) + 1
	if sh.w == nil {
		return nil, store.ErrReadOnly
	}
	var filtered *sql.Stmt
	variant := claimVariant(p, named)
	if len(p.Tasks) > 0 || len(p.Queues) > 0 || variant != -1 {
		// Prepared before joining a group: the writer's only connection is
		// busy inside one.
		var err error
		if filtered, err = sh.stmts.claimFor(ctx, sh.w, len(p.Tasks), len(p.Queues), variant); err != nil {
			return nil, err
		}
	}
	base := len(out)
	err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
		out = out[:base]
		now := store.FormatTime(stamp(p.Now, start))
		if promote {
			if _, err := counts.stmt(ctx, tx, sh.stmts.promote).ExecContext(ctx, now); err != nil {
				return err
			}
		}
		var rows *sql.Rows
		var err error
		if filtered == nil {
			rows, err = counts.stmt(ctx, tx, sh.stmts.claim).QueryContext(ctx, p.WorkerID, now, lease, want)
		} else {
			args := make([]any, 0, 4+len(p.Tasks)+2*len(p.Queues))
			args = append(args, p.WorkerID, now, lease, want)
			for _, t := range p.Tasks {
				args = append(args, t)
			}
			args = appendQueueArgs(args, p.Queues)
			if skipsQueues(p) {
				args = append(args, jsonStrings(p.SkipQueues))
			}
			rows, err = tx.StmtContext(ctx, filtered).QueryContext(ctx, args...)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		c := claimScan{shard: sh.idx, worker: p.WorkerID, lease: lease, at: store.ParseTime(now)}
		for rows.Next() {
			j, err := c.scan(rows, want-(len(out)-base))
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	// RETURNING order is unspecified: restore priority, then FIFO.
	slices.SortFunc(out[base:], func(a, b *store.Job) int {
		if a.Priority != b.Priority {
			return int(b.Priority - a.Priority)
		}
		return cmp.Compare(a.ID.Seq(), b.ID.Seq())
	})
	return out, nil
}

// claimScan reads the rows of one claim (claimColumns) into Jobs, filling
// in what the claim wrote without reading it back, and allocates the Jobs
// in blocks and its scan target once.
type claimScan struct {
	shard  int
	worker string
	lease  int64
	at     time.Time // the claim's heartbeat and start time
	block  []store.Job
	s      *jobScan
}

// scan reads one row; left bounds how many more rows the claim can return.
func (c *claimScan) scan(r *sql.Rows, left int) (*store.Job, error) {
	if c.s == nil {
		c.s = newJobScan(true)
	}
	if err := c.s.scan(r, c.shard); err != nil {
		return nil, err
	}
	if len(c.block) == 0 {
		c.block = make([]store.Job, min(max(left, 1), 64))
	}
	j := &c.block[0]
	c.block = c.block[1:]
	row := &c.s.row
	row.Status = string(store.StatusProcessing)
	row.WorkerID, row.Lease = c.worker, c.lease
	row.Heartbeat, row.StartedAt = c.at, c.at
	row.Fill(j)
	return j, nil
}

// perShard runs fn once per shard that items touch, each shard's items in one
// group transaction, the shards in parallel, and collects one error per item.
func perShard[T any](ctx context.Context, s *Store, items []T, id func(T) store.JobID,
	fn func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, item T) error) []error {
	return perShardSet(ctx, s, items, id, fn, nil)
}

// setFunc applies several items of one shard with a constant number of
// statements: it sets errs[k] for items[idxs[k]] (nil, or an item error
// such as store.ErrLeaseLost) and returns an error only to roll back the
// whole transaction.
type setFunc[T any] func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, items []T, idxs []int, errs []error) error

// perShardSet is perShard, with set (when not nil) applying the items of a
// shard that has more than one.
func perShardSet[T any](ctx context.Context, s *Store, items []T, id func(T) store.JobID,
	fn func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, item T) error, set setFunc[T]) []error {
	errs := make([]error, len(items))
	if s.closed.Load() {
		for i := range errs {
			errs[i] = store.ErrClosed
		}
		return errs
	}
	if len(items) == 1 {
		// One item: one statement, grouped with concurrent callers.
		sh, err := s.shard(id(items[0]).Shard())
		if err != nil {
			errs[0] = err
			return errs
		}
		err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
			return fn(ctx, tx, counts, sh, items[0])
		})
		var ie itemError
		if errors.As(err, &ie) {
			err = ie.err
		}
		errs[0] = err
		return errs
	}
	byShard := make(map[int][]int)
	for i, it := range items {
		sh := id(it).Shard()
		if _, err := s.shard(sh); err != nil {
			errs[i] = err
			continue
		}
		byShard[sh] = append(byShard[sh], i)
	}
	run := func(sh *shardDB, idxs []int) {
		itemErrs := make([]error, len(idxs))
		err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
			if set != nil && len(idxs) > 1 {
				before := counts.tally()
				clear(itemErrs)
				if err := set(ctx, tx, counts, sh, items, idxs, itemErrs); err != nil {
					counts.restore(before)
					return err
				}
				return nil
			}
			for k, i := range idxs {
				before := counts.tally()
				err := fn(ctx, tx, counts, sh, items[i])
				var ie itemError
				if errors.As(err, &ie) {
					itemErrs[k] = ie.err
					counts.restore(before)
				} else if err != nil {
					return err
				} else {
					itemErrs[k] = nil
				}
			}
			return nil
		})
		for k, i := range idxs {
			if err != nil {
				errs[i] = err
			} else {
				errs[i] = itemErrs[k]
			}
		}
	}
	if len(byShard) == 1 {
		for sh, idxs := range byShard {
			run(s.shards[sh], idxs)
		}
		return errs
	}
	var wg sync.WaitGroup
	for sh, idxs := range byShard {
		wg.Go(func() { run(s.shards[sh], idxs) })
	}
	wg.Wait()
	return errs
}

func leaseLost(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return asItem(store.ErrLeaseLost)
	}
	return nil
}

// Complete records successful jobs; see store.Store.
func (s *Store) Complete(ctx context.Context, acks []store.CompleteParams) []error {
	return perShardSet(ctx, s, acks, func(a store.CompleteParams) store.JobID { return a.ID },
		func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, a store.CompleteParams) error {
			var err error
			if a.Result == nil && !a.Keep {
				err = leaseLost(counts.stmt(ctx, tx, sh.stmts.completeDelete).ExecContext(ctx, a.ID.Seq(), a.Token, a.WorkerID, a.WorkerID))
			} else {
				err = leaseLost(counts.stmt(ctx, tx, sh.stmts.completeKeep).ExecContext(ctx,
					nullString(string(a.Result)), store.FormatTime(a.Now), a.ID.Seq(), a.Token, a.WorkerID, a.WorkerID))
			}
			if err != nil {
				return err
			}
			counts.processed++
			return nil
		}, completeSet)
}

// Fail records failed executions; see store.Store.
func (s *Store) Fail(ctx context.Context, fails []store.FailParams) []error {
	return perShardSet(ctx, s, fails, func(f store.FailParams) store.JobID { return f.ID },
		func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, f store.FailParams) error {
			if f.Cancelled {
				return leaseLost(tx.StmtContext(ctx, sh.stmts.failCancel).ExecContext(ctx, store.FormatTime(f.Now),
					f.Error, f.ErrorType, nullString(f.Stack), f.ID.Seq(), f.Token, f.WorkerID, f.WorkerID))
			}
			if !f.Dead {
				status := store.StatusPending
				if f.RetryAt.After(f.Now) {
					status = store.StatusScheduled
				}
				return leaseLost(counts.stmt(ctx, tx, sh.stmts.failRetry).ExecContext(ctx, string(status),
					store.FormatTime(f.RetryAt), f.Error, f.ErrorType, nullString(f.Stack), f.ID.Seq(), f.Token,
					store.FormatTime(f.Now), boolInt(f.Snooze), f.WorkerID))
			}
			var payload string
			var task, meta sql.NullString
			var attempts int
			err := tx.StmtContext(ctx, sh.stmts.failDead).QueryRowContext(ctx, store.FormatTime(f.Now),
				f.Error, f.ErrorType, nullString(f.Stack), f.ID.Seq(), f.Token, f.WorkerID, f.WorkerID).Scan(&payload, &task, &attempts, &meta)
			if errors.Is(err, sql.ErrNoRows) {
				return asItem(store.ErrLeaseLost)
			}
			if err != nil {
				return err
			}
			if _, err := tx.StmtContext(ctx, sh.stmts.insertDLQ).ExecContext(ctx, f.ID.Seq(), payload, f.Error,
				f.ErrorType, store.FormatTime(f.Now), sh.idx, task, attempts, nullString(f.Stack), meta); err != nil {
				return err
			}
			counts.failed++
			return nil
		}, failSet)
}

// Heartbeat renews heartbeats; see store.Store.
func (s *Store) Heartbeat(ctx context.Context, leases []store.Lease, now time.Time) []error {
	start := time.Now()
	return perShardSet(ctx, s, leases, func(l store.Lease) store.JobID { return l.ID },
		func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, l store.Lease) error {
			var cancel int64
			err := counts.stmt(ctx, tx, sh.stmts.heartbeat).QueryRowContext(ctx, store.FormatTime(stamp(now, start)), l.ID.Seq(), l.Token,
				l.WorkerID, l.WorkerID).Scan(&cancel)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return asItem(store.ErrLeaseLost)
			case err != nil:
				return err
			case cancel != 0:
				return asItem(store.ErrCancelRequested)
			}
			return nil
		}, func(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, leases []store.Lease, idxs []int, errs []error) error {
			return heartbeatSet(ctx, tx, counts, sh, leases, idxs, errs, store.FormatTime(stamp(now, start)))
		})
}

// Cancel cancels a job or requests its cancellation; see store.Store.
func (s *Store) Cancel(ctx context.Context, id store.JobID, now time.Time) (store.Status, error) {
	if s.closed.Load() {
		return "", store.ErrClosed
	}
	sh, err := s.shard(id.Shard())
	if err != nil {
		return "", store.ErrJobNotFound
	}
	if sh.w == nil {
		return "", store.ErrReadOnly
	}
	var status string
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		status = ""
		err := tx.QueryRowContext(ctx, sqlCancel, store.FormatTime(now), id.Seq()).Scan(&status)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var cur string
		err = tx.QueryRowContext(ctx, `SELECT status FROM fila WHERE id = ?`, id.Seq()).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return asItem(store.ErrJobNotFound)
		}
		if err != nil {
			return err
		}
		return asItem(fmt.Errorf("%w: job %d is %s", store.ErrJobFinished, id, cur))
	})
	var ie itemError
	if errors.As(err, &ie) {
		return "", ie.err
	}
	if err != nil {
		return "", err
	}
	return store.Status(status), nil
}

// Release returns running jobs to pending; see store.Store.
func (s *Store) Release(ctx context.Context, leases []store.Lease) []error {
	return perShard(ctx, s, leases, func(l store.Lease) store.JobID { return l.ID },
		func(ctx context.Context, tx *sql.Tx, _ *groupCounts, sh *shardDB, l store.Lease) error {
			return leaseLost(tx.StmtContext(ctx, sh.stmts.release).ExecContext(ctx, l.ID.Seq(), l.Token, l.WorkerID, l.WorkerID))
		})
}

// retrySeconds converts a backoff base to the retry_delay column's whole
// seconds, rounding up so that a sub-second base is not stored as zero.
func retrySeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
