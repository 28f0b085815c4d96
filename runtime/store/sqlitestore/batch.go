package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// A batch that spans several shards is written in two phases, so that it is
// all or nothing although each shard is its own database file:
//
//  1. Stage: each shard inserts its rows (unique jobs: inserts, then
//     updates them) as status 'scheduled' with
//     next_retry_at far in the future (stagedNext) and the batch's id in
//     batch_id; the row's real next_retry_at waits in batch_next. Staged
//     rows are invisible to claims, ours and queue-max's (both claim only
//     'pending' rows, and promotion needs a due next_retry_at).
//  2. Decide: one row in shard 0's qm_batches, state 'committed', is the
//     decision. Its primary key makes the decision unique: recovery that
//     gives up on a batch inserts the same id as 'aborted' first, and the
//     producer's commit then fails.
//  3. Publish: each shard turns its staged rows into ready (or scheduled)
//     rows, then the decision row is deleted.
//
// A producer that dies in between leaves staged rows behind. Recovery
// (finishBatches, run by Open and RecoverOrphans) publishes the rows of
// committed batches and deletes those of batches that have no decision and
// whose producer is dead (same host, no such process) or that are older
// than stagedTimeout. Single-shard batches need none of this: one
// transaction is atomic already.

// stagedNext is the next_retry_at of staged rows: never due.
const stagedNext = "9999-12-31T23:59:59.999Z"

// notStaged selects the rows that are not staged: listings and counts
// show only settled rows, so those of a batch that failed to commit (and
// that recovery will delete) are never seen, on a read-only open too. It
// needs no batch_id column (files queue-max wrote have none).
const notStaged = `NOT (status = 'scheduled' AND next_retry_at IS '` + stagedNext + `')`

// settledScheduled is notStaged for a query on scheduled rows only, in a
// form that keeps their partial index usable.
const settledScheduled = `status = 'scheduled' AND next_retry_at IS NOT '` + stagedNext + `'`

// stagedTimeout is how long a batch may stay staged without a decision
// before recovery aborts it, whoever its producer is.
const stagedTimeout = 10 * time.Minute

// abortedKeep is how long an 'aborted' decision is kept, so that a stalled
// producer cannot commit a batch whose rows recovery deleted.
const abortedKeep = 24 * time.Hour

// ErrBatchAborted is returned by Insert when recovery aborted a
// multi-shard batch before its producer could commit it.
var ErrBatchAborted = errors.New("queuemax: batch aborted by recovery before it committed")

// inflight holds the ids of the batches this process is inserting, so that
// recovery in this process leaves them alone and settles the rest at once.
var inflight sync.Map

var hostname = sync.OnceValue(func() string { h, _ := os.Hostname(); return h })

// newBatchID returns "host|pid|start-unix-nanos|random".
func newBatchID() string {
	return fmt.Sprintf("%s|%d|%d|%x", hostname(), os.Getpid(), time.Now().UnixNano(), rand.Uint64())
}

// batchAbandoned reports whether the producer of batch id is gone: it ran
// on this host and its process no longer exists (processGone), or the
// batch started longer than stagedTimeout ago.
func batchAbandoned(id string) bool {
	parts := strings.Split(id, "|")
	if len(parts) != 4 {
		return true // not ours to keep
	}
	pid, err1 := strconv.Atoi(parts[1])
	start, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	if time.Since(time.Unix(0, start)) > stagedTimeout {
		return true
	}
	if parts[0] != hostname() {
		return false
	}
	if pid == os.Getpid() {
		_, busy := inflight.Load(id) // any Store of this process
		return !busy
	}
	return processGone(pid)
}

// BatchHook, when set, is called by Insert at the phase boundaries of a
// multi-shard batch: "staged" after every shard has staged its rows and
// before the commit decision, "committed" after the decision and before
// publishing. Tests use it to stop a producer at the worst moments.
var BatchHook func(batchID, phase string)

const (
	sqlStage = `UPDATE fila SET batch_id = ?1, batch_next = next_retry_at, status = 'scheduled',
		next_retry_at = '` + stagedNext + `' WHERE id >= ?2 AND id <= ?3 AND batch_id IS NULL`
	sqlPublish = `UPDATE fila SET status = CASE WHEN batch_next IS NULL THEN 'pending' ELSE 'scheduled' END,
		next_retry_at = batch_next, batch_id = NULL, batch_next = NULL WHERE batch_id = ?`
	sqlUnstage = `DELETE FROM fila WHERE batch_id = ?`
)

// insertBatch is Insert for jobs that span several shards.
func (s *Store) insertBatch(ctx context.Context, jobs []store.InsertParams, byShard map[int][]int) ([]store.JobID, error) {
	ids := make([]store.JobID, len(jobs))
	batch := newBatchID()
	inflight.Store(batch, true)
	defer inflight.Delete(batch)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		staged []int
	)
	for shIdx, idxs := range byShard {
		wg.Go(func() {
			sh := s.shards[shIdx]
			err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
				// Plain jobs are inserted staged; unique ones are inserted
				// ready and staged by sqlStage below.
				if err := insertJobs(ctx, tx, counts, sh, jobs, idxs, ids, batch); err != nil {
					return err
				}
				first, last := int64(0), int64(0)
				for _, i := range idxs {
					if u := jobs[i].Unique; u == nil || u.Duplicate {
						continue // staged already, or another job's row: not ours to stage
					}
					if first == 0 {
						first = ids[i].Seq()
					}
					last = ids[i].Seq()
				}
				if first == 0 {
					return nil // no unique job left to stage
				}
				// This operation's rows are contiguous: the group runs
				// its operations one after the other on one writer (the
				// rows staged already are left as they are).
				_, err := tx.ExecContext(ctx, sqlStage, batch, first, last)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", shIdx, err))
			} else {
				staged = append(staged, shIdx)
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		if hook := BatchHook; hook != nil {
			hook(batch, "staged")
		}
		state, err := s.decide(ctx, batch, "committed")
		switch {
		case err == nil && state == "committed":
			if hook := BatchHook; hook != nil {
				hook(batch, "committed")
			}
			s.publish(context.WithoutCancel(ctx), batch, staged)
			return ids, nil
		case err == nil:
			errs = append(errs, ErrBatchAborted)
		default:
			errs = append(errs, fmt.Errorf("shard 0: commit batch: %w", err))
			// The commit may or may not have happened: settle it.
			if state, err := s.decide(context.WithoutCancel(ctx), batch, "aborted"); err == nil && state == "committed" {
				s.publish(context.WithoutCancel(ctx), batch, staged)
				return ids, nil
			}
		}
	} else {
		// Record the abort, so the staged rows cannot be committed by
		// anyone, then remove them; recovery finishes what fails here.
		s.decide(context.WithoutCancel(ctx), batch, "aborted")
	}
	for _, shIdx := range staged {
		sh := s.shards[shIdx]
		err := sh.commit.do(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
			_, err := tx.ExecContext(ctx, sqlUnstage, batch)
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %d: remove staged batch (recovery will): %w", shIdx, err))
		}
	}
	return nil, errors.Join(errs...)
}

// decide records state ('committed' or 'aborted') as batch's decision in
// shard 0 unless one is recorded already, and returns the decision that
// holds.
func (s *Store) decide(ctx context.Context, batch, state string) (string, error) {
	sh := s.shards[0]
	var got string
	err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO qm_batches (id, state, decided_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO NOTHING`, batch, state, store.FormatTime(time.Now())); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT state FROM qm_batches WHERE id = ?`, batch).Scan(&got)
	})
	return got, err
}

// publish makes a committed batch's staged rows claimable in every shard
// of list, then forgets the decision. A shard that fails keeps its rows
// staged; recovery publishes them later (the batch is committed).
func (s *Store) publish(ctx context.Context, batch string, list []int) error {
	var wg sync.WaitGroup
	var failed sync.Map
	for _, shIdx := range list {
		wg.Go(func() {
			sh := s.shards[shIdx]
			if err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
				_, err := tx.ExecContext(ctx, sqlPublish, batch)
				return err
			}); err != nil {
				failed.Store(shIdx, err)
			}
		})
	}
	wg.Wait()
	var errs []error
	failed.Range(func(k, v any) bool {
		errs = append(errs, fmt.Errorf("shard %d: publish batch: %w", k, v.(error)))
		return true
	})
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return s.shards[0].commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM qm_batches WHERE id = ?`, batch)
		return err
	})
}

// finishBatches settles the staged rows of every shard: committed batches
// are published, aborted ones and abandoned undecided ones deleted. It
// returns how many staged rows it published and deleted.
func (s *Store) finishBatches(ctx context.Context) (published, deleted int, err error) {
	if s.shards[0].w == nil {
		return 0, 0, nil
	}
	for _, sh := range s.shards {
		rows, err := sh.r.QueryContext(ctx, `SELECT DISTINCT batch_id FROM fila WHERE batch_id IS NOT NULL`)
		if err != nil {
			return published, deleted, fmt.Errorf("shard %d: staged batches: %w", sh.idx, err)
		}
		var batches []string
		for rows.Next() {
			var b string
			if err := rows.Scan(&b); err != nil {
				rows.Close()
				return published, deleted, err
			}
			batches = append(batches, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return published, deleted, err
		}
		for _, b := range batches {
			var state sql.NullString
			err := s.shards[0].r.QueryRowContext(ctx, `SELECT state FROM qm_batches WHERE id = ?`, b).Scan(&state)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return published, deleted, fmt.Errorf("shard 0: batch decision: %w", err)
			}
			st := state.String
			if !state.Valid {
				if !batchAbandoned(b) {
					continue // its producer is still at work
				}
				if st, err = s.decide(ctx, b, "aborted"); err != nil {
					return published, deleted, fmt.Errorf("shard 0: abort batch: %w", err)
				}
			}
			q := sqlUnstage
			if st == "committed" {
				q = sqlPublish
			}
			var n int
			err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
				var err error
				n, err = affected(tx.ExecContext(ctx, q, b))
				return err
			})
			if err != nil {
				return published, deleted, fmt.Errorf("shard %d: settle batch: %w", sh.idx, err)
			}
			if st == "committed" {
				published += n
			} else {
				deleted += n
			}
		}
	}
	// Forget committed decisions with nothing left staged (a producer that
	// died after publishing), and aborted ones once no producer can be
	// waiting to commit them.
	rows, err := s.shards[0].r.QueryContext(ctx, `SELECT id, state, decided_at FROM qm_batches`)
	if err != nil {
		return published, deleted, fmt.Errorf("shard 0: batch decisions: %w", err)
	}
	var forget []string
	for rows.Next() {
		var id, state, at string
		if err := rows.Scan(&id, &state, &at); err != nil {
			rows.Close()
			return published, deleted, err
		}
		switch {
		case state == "aborted" && time.Since(store.ParseTime(at)) > abortedKeep:
			forget = append(forget, id)
		case state == "committed" && batchAbandoned(id):
			forget = append(forget, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return published, deleted, err
	}
	for _, id := range forget {
		left := false
		for _, sh := range s.shards {
			var has bool
			if err := sh.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM fila WHERE batch_id = ?)`, id).Scan(&has); err != nil {
				return published, deleted, fmt.Errorf("shard %d: staged rows: %w", sh.idx, err)
			}
			left = left || has
		}
		if left {
			continue
		}
		if err := s.shards[0].commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM qm_batches WHERE id = ?`, id)
			return err
		}); err != nil {
			return published, deleted, fmt.Errorf("shard 0: forget batch: %w", err)
		}
	}
	return published, deleted, nil
}
