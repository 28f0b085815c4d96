package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Plain rows: most batches hold only jobs without a partition key, run
// time, metadata, timeout, tags or unique key, in the default queue and
// not staged. Their insert binds 7 values per row (plainCols) instead of
// insertCols' 18, the others being constants (jobCol.plain): with
// modernc.org/sqlite every bind and its unbind take the connection's
// mutex, and they were a third of a batch insert's CPU. The parameters are
// anonymous (?): the driver looks up every parameter's name, which for
// numbered ones (?NNN) is a linear search. The row written is the one
// insertRow writes (TestPlainRowLiterals); insertJobs uses these
// statements for a chunk whose every row is plain (insertPlainRows, same
// sizes as insertChunks).

// plainJob reports whether j can be written as a plain row (not staged:
// the caller passes no batch id).
func plainJob(j *store.InsertParams) bool {
	return j.PartitionKey == nil && j.Unique == nil && !j.RunAt.After(j.Now) && len(j.Metadata) == 0 &&
		j.Timeout <= 0 && len(j.Tags) == 0 && store.QueueOf(j.Queue) == store.DefaultQueue && j.RetryDelay%time.Second == 0
}

// plainRowsSQL returns the INSERT of n plain rows, in insertCols' order
// with the constant columns as literals.
func plainRowsSQL(n int) string {
	vals := make([]string, len(insertCols))
	for i, c := range insertCols {
		vals[i] = cmp.Or(jobCols[c].plain, "?")
	}
	row := "(" + strings.Join(vals, ", ") + ")"
	return `INSERT INTO fila (` + insertNames + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// plainRow appends a plain row's values (plainCols) to args.
func plainRow(args *argRow, sh *shardDB, j *store.InsertParams) {
	v := rowVals{j: j, shard: sh.idx}
	v.putPlain(args)
}

// insertPlainJob is insertJob for a plain job, with st the shard's
// one-row plain insert bound to the current transaction.
func insertPlainJob(ctx context.Context, st *sql.Stmt, sh *shardDB, j *store.InsertParams) (store.JobID, error) {
	args := make(argRow, 0, len(plainCols))
	plainRow(&args, sh, j)
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("shard %d: insert job: %w", sh.idx, err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	return store.NewJobID(sh.idx, seq), nil
}
