package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Set-based acknowledgements: several items of one shard are applied with
// a constant number of statements instead of one per item. The fence is
// read first, in the group's write transaction (so nothing changes between
// the read and the writes): the batch's rows that are processing, with
// their lease token and worker. Each item's result is then decided here,
// in item order, exactly as the per-item statements decide it: the token
// must match and, when the lease names a worker, so must the row's worker
// (queue-max claims rows without changing the token); an item that ends
// the job (Complete) consumes its row, so a second item for the same job
// finds it gone.

// fenceRow is one processing row as the fence read it.
type fenceRow struct {
	lease  int64
	worker string
	cancel bool
	gone   bool // ended by an earlier item of the batch
}

// idList returns the ids as a JSON array, the parameter json_each reads.
func idList(n int, id func(k int) int64) string {
	b := make([]byte, 0, 2+n*8)
	b = append(b, '[')
	for k := range n {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id(k), 10)
	}
	return string(append(b, ']'))
}

// readFence reads the processing rows among the leases' jobs.
func readFence(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, leases []store.Lease) (map[int64]*fenceRow, error) {
	rows, err := counts.stmt(ctx, tx, sh.stmts.fence).QueryContext(ctx, idList(len(leases), func(k int) int64 { return leases[k].ID.Seq() }))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := make(map[int64]*fenceRow, len(leases))
	block := make([]fenceRow, len(leases))
	for rows.Next() {
		var id int64
		var lease sql.NullInt64
		var worker sql.NullString
		var cancel sql.NullInt64
		if err := rows.Scan(&id, &lease, &worker, &cancel); err != nil {
			return nil, err
		}
		r := &block[len(got)]
		r.lease, r.worker, r.cancel = lease.Int64, worker.String, cancel.Int64 != 0
		got[id] = r
	}
	return got, rows.Err()
}

// holds reports whether l's fence holds against the rows read.
func holds(rows map[int64]*fenceRow, l store.Lease) (*fenceRow, bool) {
	r := rows[l.ID.Seq()]
	if r == nil || r.gone || r.lease != l.Token || (l.WorkerID != "" && r.worker != l.WorkerID) {
		return nil, false
	}
	return r, true
}

// completeSet acknowledges several jobs of one shard: rows without a
// result are deleted by one statement; rows kept as completed (with a
// result, or with Keep) are updated by another. Each statement checks the
// fence itself and returns the rows it wrote, so there is no separate
// fence read. Items are decided in order, as the per-item statements
// decide them: when several items name one job (a stale lease and the
// current one), the first whose fence holds completes it and the others
// lose; a later item for the same job goes into another round of the
// statements, which only a batch holding such items needs.
func completeSet(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB,
	acks []store.CompleteParams, idxs []int, errs []error) error {
	done := make(map[int64]struct{}, len(idxs))
	left := make([]int, len(idxs)) // positions k of idxs still undecided
	for k := range left {
		left[k] = k
	}
	for len(left) > 0 {
		var del, keep failRows
		lite := newLiteRows() // the same round in the plain form (acklite.go)
		round := make(map[int64]struct{}, len(left))
		var sent, later []int
		for _, k := range left {
			a := acks[idxs[k]]
			id := a.ID.Seq()
			if _, ok := done[id]; ok {
				errs[k] = store.ErrLeaseLost // an earlier item completed the job
				continue
			}
			if _, ok := round[id]; ok {
				later = append(later, k)
				continue
			}
			round[id] = struct{}{}
			lite.add(a, len(sent) == 0)
			sent = append(sent, k)
			if a.Result == nil && !a.Keep {
				del.open()
				del.int(id).int(a.Token).hex(a.WorkerID).close()
			} else {
				keep.open()
				keep.int(id).int(a.Token).hex(a.WorkerID).hexOrNull(string(a.Result)).time(a.Now).close()
			}
		}
		wrote := make(map[int64]struct{}, len(sent))
		type write struct {
			rows *failRows
			st   *sql.Stmt
			lite []byte
		}
		ws := []write{{&del, sh.stmts.completeDeleteSet, nil}, {&keep, sh.stmts.completeKeepSet, nil}}
		if lite.ok {
			ws = []write{{&del, sh.stmts.completeDeleteLite, lite.del}, {&keep, sh.stmts.completeKeepLite, lite.keep}}
		}
		for _, w := range ws {
			if len(w.rows.b) == 0 {
				continue
			}
			var rows *sql.Rows
			var err error
			if lite.ok {
				rows, err = counts.stmt(ctx, tx, w.st).QueryContext(ctx, liteParam(w.lite), lite.worker)
			} else {
				rows, err = counts.stmt(ctx, tx, w.st).QueryContext(ctx, w.rows.String())
			}
			if err != nil {
				return err
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				wrote[id] = struct{}{}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		for _, k := range sent {
			id := acks[idxs[k]].ID.Seq()
			if _, ok := wrote[id]; !ok {
				errs[k] = store.ErrLeaseLost
				continue
			}
			done[id] = struct{}{}
			errs[k] = nil
			counts.processed++
		}
		left = later
	}
	return nil
}

// heartbeatSet renews several leases of one shard with one statement.
func heartbeatSet(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB,
	leases []store.Lease, idxs []int, errs []error, at string) error {
	batch := make([]store.Lease, len(idxs))
	for k, i := range idxs {
		batch[k] = leases[i]
	}
	rows, err := readFence(ctx, tx, counts, sh, batch)
	if err != nil {
		return err
	}
	renew := make([]int64, 0, len(idxs))
	for k, l := range batch {
		r, ok := holds(rows, l)
		switch {
		case !ok:
			errs[k] = store.ErrLeaseLost
			continue
		case r.cancel:
			errs[k] = store.ErrCancelRequested
		}
		renew = append(renew, l.ID.Seq())
	}
	if len(renew) > 0 {
		if _, err := counts.stmt(ctx, tx, sh.stmts.heartbeatIDs).ExecContext(ctx,
			idList(len(renew), func(k int) int64 { return renew[k] }), at); err != nil {
			return err
		}
	}
	return nil
}

// failRows builds the JSON parameter of the set-based failure (and kept
// completion) statements:
// an array of arrays, texts hex-encoded (unhex in SQL gives back the exact
// bytes, valid UTF-8 or not) and times in TimeLayout.
type failRows struct{ b []byte }

func (r *failRows) open() {
	if len(r.b) == 0 {
		r.b = append(r.b, '[')
	} else {
		r.b = append(r.b, ',')
	}
	r.b = append(r.b, '[')
}

func (r *failRows) int(v int64) *failRows {
	r.b = strconv.AppendInt(r.b, v, 10)
	r.b = append(r.b, ',')
	return r
}

func (r *failRows) str(s string) *failRows {
	r.b = append(r.b, '"')
	r.b = append(r.b, s...)
	r.b = append(r.b, '"', ',')
	return r
}

func (r *failRows) hex(s string) *failRows {
	r.b = append(r.b, '"')
	r.b = hex.AppendEncode(r.b, []byte(s))
	r.b = append(r.b, '"', ',')
	return r
}

// hexOrNull is hex for a text stored as NULL when empty.
func (r *failRows) hexOrNull(s string) *failRows {
	if s == "" {
		r.b = append(r.b, "null,"...)
		return r
	}
	return r.hex(s)
}

func (r *failRows) time(t time.Time) *failRows {
	r.b = append(r.b, '"')
	r.b = store.AppendTime(r.b, t)
	r.b = append(r.b, '"', ',')
	return r
}

// close ends the current row (dropping its trailing comma).
func (r *failRows) close() { r.b[len(r.b)-1] = ']' }

func (r *failRows) String() string { return string(append(r.b, ']')) }

// failSet records several failures of one shard: retries in one UPDATE,
// dead and cancelled jobs in one more (with one INSERT of the dead ones'
// dead letters before it).
func failSet(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB,
	fails []store.FailParams, idxs []int, errs []error) error {
	leases := make([]store.Lease, len(idxs))
	for k, i := range idxs {
		leases[k] = fails[i].Lease
	}
	rows, err := readFence(ctx, tx, counts, sh, leases)
	if err != nil {
		return err
	}
	var retry, end failRows
	dead := 0
	for k, i := range idxs {
		f := fails[i]
		r, ok := holds(rows, f.Lease)
		if !ok {
			errs[k] = store.ErrLeaseLost
			continue
		}
		r.gone = true
		switch {
		case f.Cancelled:
			end.open()
			end.int(f.ID.Seq()).str(string(store.StatusCancelled)).hex(f.Error).hex(f.ErrorType).hexOrNull(f.Stack).time(f.Now).close()
		case f.Dead:
			end.open()
			end.int(f.ID.Seq()).str(string(store.StatusFailed)).hex(f.Error).hex(f.ErrorType).hexOrNull(f.Stack).time(f.Now).close()
			dead++
		default:
			status := store.StatusPending
			if f.RetryAt.After(f.Now) {
				status = store.StatusScheduled
			}
			retry.open()
			retry.int(f.ID.Seq()).str(string(status)).time(f.RetryAt).hex(f.Error).hex(f.ErrorType).hexOrNull(f.Stack).
				time(f.Now).int(int64(boolInt(f.Snooze))).close()
		}
	}
	if len(retry.b) > 0 {
		if _, err := counts.stmt(ctx, tx, sh.stmts.failRetrySet).ExecContext(ctx, retry.String()); err != nil {
			return err
		}
	}
	if len(end.b) > 0 {
		arg := end.String()
		if dead > 0 {
			if _, err := counts.stmt(ctx, tx, sh.stmts.failDLQSet).ExecContext(ctx, arg, sh.idx); err != nil {
				return err
			}
		}
		if _, err := counts.stmt(ctx, tx, sh.stmts.failEndSet).ExecContext(ctx, arg); err != nil {
			return err
		}
	}
	counts.failed += dead
	return nil
}
