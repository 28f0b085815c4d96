package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// insertRow writes j's row (insertCols' values, in order) to w. With a
// batch id, the row is written staged for that multi-shard batch (see
// batch.go and rowVals.prepare).
func insertRow(w *argRow, sh *shardDB, j *store.InsertParams, batch string) {
	v := rowVals{j: j, shard: sh.idx, batch: batch}
	v.putRow(w, insertCols)
}

// retryMillis returns the retry_delay_ms column of a backoff base that
// whole seconds (retry_delay, as queue-max keeps it) do not hold exactly.
func retryMillis(d time.Duration) (int64, bool) {
	return d.Milliseconds(), d%time.Second != 0
}

// argRow collects rows as statement arguments.
type argRow []any

func (r *argRow) null()         { *r = append(*r, nil) }
func (r *argRow) int(v int64)   { *r = append(*r, v) }
func (r *argRow) text(s string) { *r = append(*r, s) }

// textOrNull appends NULL for "".
func (r *argRow) textOrNull(s string) {
	if s == "" {
		r.null()
	} else {
		r.text(s)
	}
}

var (
	sqlInsert = insertRowsSQL(1)
	// sqlInsertUnique is sqlInsert for a unique job (uniqueCols: insertCols
	// and the key and statuses): it inserts nothing when idx_qm_unique
	// already holds the key for a counted status.
	sqlInsertUnique = `INSERT INTO fila (` + namesOf(uniqueCols) + `) VALUES (` +
		strings.TrimSuffix(strings.Repeat("?, ", len(uniqueCols)), ", ") + `) ON CONFLICT DO NOTHING`
)

// insertChunks are the row counts of the multi-row insert statements
// prepared per shard (stmts.insertRows, same order): a batch is written
// 64 rows per statement, the rest in the binary decomposition of its
// size, so n jobs take at most n/64+6 statements, none parsed per call.
var insertChunks = []int{64, 32, 16, 8, 4, 2}

// insertRowsSQL returns the INSERT of n rows of bound values.
func insertRowsSQL(n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(insertCols)), ", ") + ")"
	return `INSERT INTO fila (` + insertNames + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// insertJob writes one job row with st, the shard's insert statement bound
// to the current transaction, staged for batch when batch is not "". A
// job whose RunAt is after Now is stored as scheduled.
func insertJob(ctx context.Context, tx *sql.Tx, st *sql.Stmt, sh *shardDB, j *store.InsertParams, batch string) (store.JobID, error) {
	args := make(argRow, 0, len(insertCols))
	insertRow(&args, sh, j, batch)
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("shard %d: insert job: %w", sh.idx, err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if len(j.Tags) > 0 {
		if err := sh.insertTags(ctx, tx, []int64{seq}); err != nil {
			return 0, fmt.Errorf("shard %d: insert job tags: %w", sh.idx, err)
		}
	}
	return store.NewJobID(sh.idx, seq), nil
}

// insertJobs writes jobs[i] for each i of idxs into sh, in order, and sets
// ids[i], with multi-row statements for batches. With a batch id the plain
// jobs are written staged for it (insertRow); unique jobs are written
// ready, for the caller to stage.
func insertJobs(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB,
	jobs []store.InsertParams, idxs []int, ids []store.JobID, batch string) error {
	var args argRow
	for len(idxs) > 0 {
		// A run of plain jobs is written in chunks of insertChunks rows;
		// a unique job is its own statement (insertAny).
		var st *sql.Stmt
		n := 0
		for _, i := range idxs {
			if jobs[i].Unique != nil || n == insertChunks[0] {
				break
			}
			n++
		}
		for c, size := range insertChunks {
			if n >= size {
				st, n = sh.stmts.insertRows[c], size
				break
			}
		}
		if st == nil {
			n = 1
		}
		if n == 1 {
			id, err := insertAny(ctx, tx, counts, sh, &jobs[idxs[0]], batch)
			if err != nil {
				return err
			}
			ids[idxs[0]] = id
			idxs = idxs[1:]
			continue
		}
		if args == nil {
			args = make(argRow, 0, n*len(insertCols))
		}
		args = args[:0]
		plain := batch == "" // a chunk of plain rows binds fewer values (insertplain.go)
		for _, i := range idxs[:n] {
			plain = plain && plainJob(&jobs[i])
		}
		if plain {
			st = sh.stmts.insertPlainRows[slices.Index(insertChunks, n)]
			for _, i := range idxs[:n] {
				plainRow(&args, sh, &jobs[i])
			}
		}
		for _, i := range idxs[:n] {
			if plain {
				break
			}
			insertRow(&args, sh, &jobs[i], batch)
		}
		res, err := counts.stmt(ctx, tx, st).ExecContext(ctx, args...)
		if err != nil {
			return fmt.Errorf("shard %d: insert jobs: %w", sh.idx, err)
		}
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		// One statement under the write lock: AUTOINCREMENT gives its
		// rows consecutive ids, in VALUES order.
		var tagged []int64
		for k, i := range idxs[:n] {
			ids[i] = store.NewJobID(sh.idx, last-int64(n-1-k))
			if len(jobs[i].Tags) > 0 {
				tagged = append(tagged, ids[i].Seq())
			}
		}
		if err := sh.insertTags(ctx, tx, tagged); err != nil {
			return fmt.Errorf("shard %d: insert job tags: %w", sh.idx, err)
		}
		idxs = idxs[n:]
	}
	return nil
}

// Insert stores jobs; see store.Store. Jobs of one shard are written in
// one transaction; a batch spanning several shards is staged, committed and
// published in two phases (see batch.go).
func (s *Store) Insert(ctx context.Context, jobs []store.InsertParams) ([]store.JobID, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	ids := make([]store.JobID, len(jobs))
	byShard := make(map[int][]int) // shard -> indexes into jobs
	for i, j := range jobs {
		if _, err := s.shard(j.Shard); err != nil {
			return nil, err
		}
		byShard[j.Shard] = append(byShard[j.Shard], i)
	}
	insert := func(sh *shardDB, idxs []int) error {
		return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
			return insertJobs(ctx, tx, counts, sh, jobs, idxs, ids, "")
		})
	}
	if len(byShard) == 1 {
		for sh, idxs := range byShard {
			return ids, insert(s.shards[sh], idxs)
		}
	}
	// Several shards: two phases, so the batch is all or nothing.
	return s.insertBatch(ctx, jobs, byShard)
}

// insertAny writes one job with the shard's insert, or, for a unique job, with the
// shard's unique insert: a duplicate writes nothing, returns the holder's
// ID and sets j.Unique.Duplicate. The unique index decides inside the
// shard's write transaction, so concurrent inserts (any process) agree.
// Its arguments are uniqueCols' values. A plain job is
// staged for batch when batch is not ""; a unique one never is (the
// caller stages it).
func insertAny(ctx context.Context, tx *sql.Tx, counts *groupCounts, sh *shardDB, j *store.InsertParams, batch string) (store.JobID, error) {
	u := j.Unique
	if u == nil {
		if batch == "" && plainJob(j) {
			return insertPlainJob(ctx, counts.stmt(ctx, tx, sh.stmts.insertPlain), sh, j)
		}
		return insertJob(ctx, tx, counts.stmt(ctx, tx, sh.stmts.insert), sh, j, batch)
	}
	u.Duplicate = false
	args := make(argRow, 0, len(uniqueCols))
	v := rowVals{j: j, shard: sh.idx}
	v.putRow(&args, uniqueCols)
	res, err := counts.stmt(ctx, tx, sh.stmts.insertUnique).ExecContext(ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("shard %d: insert unique job: %w", sh.idx, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 1 {
		seq, err := res.LastInsertId()
		if err != nil {
			return 0, err
		}
		if len(j.Tags) > 0 {
			if err := sh.insertTags(ctx, tx, []int64{seq}); err != nil {
				return 0, fmt.Errorf("shard %d: insert job tags: %w", sh.idx, err)
			}
		}
		return store.NewJobID(sh.idx, seq), nil
	}
	var seq int64
	if err := counts.stmt(ctx, tx, sh.stmts.uniqueHolder).QueryRowContext(ctx, u.Key).Scan(&seq); err != nil {
		return 0, fmt.Errorf("shard %d: unique job skipped, find its holder: %w", sh.idx, err)
	}
	u.Duplicate = true
	return store.NewJobID(sh.idx, seq), nil
}

// uniqueStates encodes counted statuses as the unique_states column:
// ",pending,scheduled,processing,".
func uniqueStates(states []store.Status) string {
	var b strings.Builder
	b.WriteByte(',')
	for _, s := range states {
		b.WriteString(string(s))
		b.WriteByte(',')
	}
	return b.String()
}

// sqlYieldKey is the unique_key of a failed job going back to pending
// (RetryJob, RetryFailed, RequeueDead): it drops its key, running as a
// plain job, when another job holds the key now or when a failed job of
// the same key with a smaller id is retried by the same statement (?1 =
// 1), which keeps it. Without this, the move would violate idx_qm_unique.
const sqlYieldKey = `unique_key = CASE WHEN unique_key IS NOT NULL AND (
		EXISTS (SELECT 1 FROM fila o WHERE o.unique_key = fila.unique_key AND o.id <> fila.id
			AND o.unique_key IS NOT NULL AND instr(o.unique_states, ',' || o.status || ',') > 0)
		OR (?1 = 1 AND EXISTS (SELECT 1 FROM fila o WHERE o.unique_key = fila.unique_key AND o.id < fila.id AND o.status = 'failed')))
	THEN NULL ELSE unique_key END`

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// metadataOf returns a stored metadata column as a JSON value, nil if NULL.
func metadataOf(s sql.NullString) []byte {
	if !s.Valid {
		return nil
	}
	return []byte(s.String)
}
