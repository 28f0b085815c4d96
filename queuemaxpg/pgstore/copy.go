package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// copyMin is the smallest batch Insert writes with COPY: below it the
// extra round trip that takes the batch's ids costs more than COPY saves.
const copyMin = 32

// copyable reports whether every job of a batch can be written by COPY:
// none is unique (each of those decides with its own statement, see
// unique.go) and none waits for a run-at time (the database clock's
// now() plus the job's delay is an expression, which COPY cannot
// evaluate). Tags, metadata, partition keys, queues and timeouts are
// plain values and do not stop it. A batch that is not copyable is one
// INSERT … SELECT unnest statement, as before.
func copyable(jobs []store.InsertParams) bool {
	if len(jobs) < copyMin {
		return false
	}
	for _, j := range jobs {
		if j.Unique != nil {
			return false
		}
		if !j.RunAt.IsZero() {
			now := j.Now
			if now.IsZero() {
				now = hostNow()
			}
			if j.RunAt.After(now) {
				return false
			}
		}
	}
	return true
}

// putFunc appends a job's value of one column to a row in COPY's binary
// format (jobCol.put; the helpers below).
type putFunc func(b []byte, j *store.InsertParams, id int64) []byte

// The columns COPY writes (jobCols names which, in order); status is left
// to its default (pending), created_at to its default, the database's
// now(), unless the store follows the callers' clocks.
func putID(b []byte, _ *store.InsertParams, id int64) []byte { return putInt8(b, id) }

func putShard(b []byte, j *store.InsertParams, _ int64) []byte { return putInt4(b, int32(j.Shard)) }

func putPartitionKey(b []byte, j *store.InsertParams, _ int64) []byte {
	if j.PartitionKey == nil {
		return putNull(b)
	}
	return putInt8(b, *j.PartitionKey)
}

func putTask(b []byte, j *store.InsertParams, _ int64) []byte {
	if j.Task == "" {
		return putNull(b)
	}
	return putBytes(b, j.Task)
}

func putPayload(b []byte, j *store.InsertParams, _ int64) []byte { return putBytes(b, j.Payload) }

func putPriority(b []byte, j *store.InsertParams, _ int64) []byte {
	return be.AppendUint16(be.AppendUint32(b, 2), uint16(j.Priority))
}

func putMaxAttempts(b []byte, j *store.InsertParams, _ int64) []byte {
	return putInt4(b, int32(j.MaxAttempts))
}

func putRetryDelay(b []byte, j *store.InsertParams, _ int64) []byte {
	return putInt4(b, retryMillis(j.RetryDelay))
}

func putCreated(b []byte, j *store.InsertParams, _ int64) []byte {
	now := j.Now
	if now.IsZero() {
		now = hostNow()
	}
	return putInt8(b, now.UnixMicro()-pgEpochMicros)
}

func putMetadata(b []byte, j *store.InsertParams, _ int64) []byte {
	if len(j.Metadata) == 0 {
		return putNull(b)
	}
	return putBytes(b, j.Metadata)
}

func putTimeout(b []byte, j *store.InsertParams, _ int64) []byte {
	if j.Timeout <= 0 {
		return putNull(b)
	}
	return putInt8(b, max(1, j.Timeout.Milliseconds()))
}

func putTags(b []byte, j *store.InsertParams, _ int64) []byte {
	if len(j.Tags) == 0 {
		return putNull(b)
	}
	return putTextArray(b, j.Tags)
}

func putQueue(b []byte, j *store.InsertParams, _ int64) []byte {
	return putBytes(b, store.QueueOf(j.Queue))
}

// copyCols returns the columns COPY writes, in jobCols' order: those
// with a put, created_at only on the callers' clocks.
func copyCols(host bool) []jobCol {
	var out []jobCol
	for _, c := range jobCols {
		if c.put != nil && (host || !c.hostOnly) {
			out = append(out, c)
		}
	}
	return out
}

// copySQL returns the COPY statement for the jobs table of schema (quoted).
func copySQL(schema string, host bool) string {
	cols := copyCols(host)
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return "COPY " + schema + ".jobs (" + strings.Join(names, ", ") + ") FROM STDIN (FORMAT binary)"
}

// pgEpochMicros is PostgreSQL's timestamp epoch, 2000-01-01 UTC, in Unix
// microseconds.
const pgEpochMicros = 946684800 * 1000000

// The binary COPY format's pieces: a field is its length (-1 for NULL)
// then its bytes, in network order.
func putNull(b []byte) []byte { return be.AppendUint32(b, 0xffffffff) }

func putInt4(b []byte, v int32) []byte { return be.AppendUint32(be.AppendUint32(b, 4), uint32(v)) }

func putInt8(b []byte, v int64) []byte { return be.AppendUint64(be.AppendUint32(b, 8), uint64(v)) }

func putBytes[T string | []byte | json.RawMessage](b []byte, v T) []byte {
	return append(be.AppendUint32(b, uint32(len(v))), v...)
}

// putTextArray appends a one-dimensional text[] without NULLs.
func putTextArray(b []byte, vs []string) []byte {
	n := 20
	for _, v := range vs {
		n += 4 + len(v)
	}
	b = be.AppendUint32(b, uint32(n))
	b = be.AppendUint32(b, 1) // dimensions
	b = be.AppendUint32(b, 0) // no NULLs
	b = be.AppendUint32(b, pgtype.TextOID)
	b = be.AppendUint32(b, uint32(len(vs)))
	b = be.AppendUint32(b, 1) // lower bound
	for _, v := range vs {
		b = putBytes(b, v)
	}
	return b
}

// be writes COPY's network byte order.
var be = binary.BigEndian

// copyHeader opens a binary COPY stream: the signature, no flags, no
// header extension.
const copyHeader = "PGCOPY\n\377\r\n\000\000\000\000\000\000\000\000\000"

// copyBufs holds COPY streams' buffers for reuse: a batch of 1,000 jobs
// is a buffer of ~150 kB, which costs more to allocate (and zero, and
// collect) than to encode into. insertCopy returns a buffer only once
// COPY has succeeded, when pgconn's reader of it has finished; a buffer
// above copyBufMax is left to the collector.
var copyBufs sync.Pool

const copyBufMax = 4 << 20

// encodeCopy appends jobs with their ids as one binary COPY stream of
// cols to b[:0].
func encodeCopy(b []byte, cols []jobCol, jobs []store.InsertParams, seqs []int64) []byte {
	if need := len(copyHeader) + len(jobs)*(96+len(cols)*4) + 2; cap(b) < need {
		b = make([]byte, 0, need)
	}
	b = append(b[:0], copyHeader...)
	for i := range jobs {
		j := &jobs[i]
		b = be.AppendUint16(b, uint16(len(cols)))
		for _, c := range cols {
			b = c.put(b, j, seqs[i])
		}
	}
	return be.AppendUint16(b, 0xffff) // the trailer
}

// insertCopy writes a copyable batch with COPY, on one connection: first
// one statement takes the batch's ids from the jobs sequence (in
// ascending order, given to the jobs in input order, as insertWith's
// single statement does), then COPY writes the rows with those ids,
// encoded here in COPY's binary format. COPY is one statement: the batch
// is stored all or nothing, and the statement-level insert trigger
// notifies once.
func (s *Store) insertCopy(ctx context.Context, jobs []store.InsertParams) ([]store.JobID, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("queuemax: insert jobs: %w", &notSent{err})
	}
	defer conn.Release()
	var seqs []int64
	if err := conn.QueryRow(ctx, s.q.nextIDs, len(jobs)).Scan(&seqs); err != nil {
		return nil, fmt.Errorf("queuemax: insert jobs: take ids: %w", &notSent{err})
	}
	if len(seqs) != len(jobs) {
		return nil, fmt.Errorf("queuemax: insert jobs: %d ids taken for %d jobs", len(seqs), len(jobs))
	}
	slices.Sort(seqs)
	var buf []byte
	if p, ok := copyBufs.Get().(*[]byte); ok {
		buf = *p
	}
	data := encodeCopy(buf, copyCols(s.host), jobs, seqs)
	tag, err := conn.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(data), s.q.copy)
	if err != nil {
		// pgconn may return before its reader of data stops: data is
		// not reused.
		return nil, fmt.Errorf("queuemax: insert jobs (COPY): %w", err)
	}
	if cap(data) <= copyBufMax {
		copyBufs.Put(&data)
	}
	if n := tag.RowsAffected(); int(n) != len(jobs) {
		return nil, fmt.Errorf("queuemax: insert jobs (COPY): %d rows written for %d jobs", n, len(jobs))
	}
	out := make([]store.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = store.NewJobID(j.Shard, seqs[i])
	}
	return out, nil
}
