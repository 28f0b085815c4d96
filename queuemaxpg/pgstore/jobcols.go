package pgstore

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// jobCol is one column of the jobs table as the store reads, inserts and
// copies it. jobCols is the one list of them: what a full read selects
// (jobColumns), what a claim returns (claimColumns), where a scan puts
// each (jobScan), what COPY writes (copyCols, copy.go) and what the
// INSERT statements write (insertSelect) all derive from it.
type jobCol struct {
	name string
	// dest is where a scan stores the column.
	dest func(*jobScan) any
	// claim: a claim returns it (what the engine needs to run the job).
	claim bool
	// put appends a job's value to a COPY row; nil leaves the column to
	// its default. hostOnly: only on the callers' clocks (created_at).
	put      putFunc
	hostOnly bool
	// ins is the column's value in an INSERT … SELECT from its input
	// row u (insFields); "" leaves it to its default.
	ins string
}

// jobCols lists the jobs table's columns a read returns, in order.
var jobCols = []jobCol{
	{"id", func(s *jobScan) any { return &s.row.Seq }, true, putID, false, ""},
	{"shard", func(s *jobScan) any { return &s.row.Shard }, true, putShard, false, "u.shard"},
	{"partition_key", func(s *jobScan) any { return &s.key }, true, putPartitionKey, false, "u.pkey"},
	{"task", func(s *jobScan) any { return &s.task }, true, putTask, false, "u.task"},
	{"payload", func(s *jobScan) any { return &s.row.Payload }, true, putPayload, false, "u.payload::json"},
	{"status", func(s *jobScan) any { return &s.row.Status }, false, nil, false, insStatus},
	{"priority", func(s *jobScan) any { return &s.row.Priority }, true, putPriority, false, "u.prio"},
	{"attempts", func(s *jobScan) any { return &s.row.Attempts }, true, nil, false, ""},
	{"max_attempts", func(s *jobScan) any { return &s.row.MaxAttempts }, true, putMaxAttempts, false, "u.maxa"},
	{"retry_delay", func(s *jobScan) any { return &s.row.RetryDelayMS }, true, putRetryDelay, false, "u.rd"},
	{"last_error", func(s *jobScan) any { return &s.lastErr }, true, nil, false, ""},
	{"error_type", func(s *jobScan) any { return &s.errType }, true, nil, false, ""},
	{"error_stack", func(s *jobScan) any { return &s.errStack }, false, nil, false, ""},
	{"worker_id", func(s *jobScan) any { return &s.worker }, false, nil, false, ""},
	{"lease", func(s *jobScan) any { return &s.lease }, false, nil, false, ""},
	{"heartbeat", func(s *jobScan) any { return &s.heartbeat }, true, nil, false, ""},
	{"created_at", func(s *jobScan) any { return &s.created }, true, putCreated, true, "@rownow"},
	{"started_at", func(s *jobScan) any { return &s.started }, false, nil, false, ""},
	{"completed_at", func(s *jobScan) any { return &s.completed }, false, nil, false, ""},
	{"next_retry_at", func(s *jobScan) any { return &s.next }, true, nil, false, insRunAt},
	{"result", func(s *jobScan) any { return &s.row.Result }, false, nil, false, ""},
	{"metadata", func(s *jobScan) any { return &s.row.Metadata }, true, putMetadata, false, "u.meta::json"},
	{"cancel_requested", func(s *jobScan) any { return &s.row.CancelRequested }, false, nil, false, ""},
	{"snoozes", func(s *jobScan) any { return &s.row.Snoozes }, true, nil, false, ""},
	{"timeout_ms", func(s *jobScan) any { return &s.timeout }, true, putTimeout, false, "u.tmo"},
	{"tags", func(s *jobScan) any { return &s.row.Tags }, true, putTags, false, insTags},
	{"queue", func(s *jobScan) any { return &s.queue }, true, putQueue, false, "u.queue"},
	{"unique_key", func(s *jobScan) any { return &s.uniqueKey }, false, nil, false, ""},
	{"wf_id", func(s *jobScan) any { return &s.wf }, true, nil, false, ""},
	{"progress", func(s *jobScan) any { return &s.row.Progress }, false, nil, false, ""},
}

// The values of an inserted job's columns that are not one of u's fields:
// a job due later is stored as scheduled, at its caller's now (u.at, or
// the database's) plus its delay; its tags arrive as a JSON array.
const (
	insStatus = `CASE WHEN u.delay > 0 THEN 'scheduled' ELSE 'pending' END`
	insRunAt  = `CASE WHEN u.delay > 0 THEN @rownow + u.delay` + us + ` END`
	insTags   = `CASE WHEN u.tags IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(u.tags::json)) END`
)

// insFields are the fields of an insert's input row u, in the order of
// its parameters (rowArgs, jobArrays in insert.go), with their types.
var insFields = []struct{ name, typ string }{
	{"shard", "integer"}, {"pkey", "bigint"}, {"task", "text"}, {"payload", "text"}, {"prio", "smallint"},
	{"maxa", "integer"}, {"rd", "integer"}, {"at", "timestamptz"}, {"delay", "bigint"}, {"meta", "text"},
	{"tmo", "bigint"}, {"tags", "text"}, {"queue", "text"},
}

// insertSelect returns an INSERT's column list and its SELECT list: each
// column of jobCols with an ins value, or a value in over (which also
// adds columns whose ins is ""), then the extra columns (name, value).
func insertSelect(over map[string]string, extra ...[2]string) (cols, vals string) {
	var c, v []string
	for _, col := range jobCols {
		val, ok := over[col.name]
		if !ok {
			val = col.ins
		}
		if val != "" {
			c, v = append(c, col.name), append(v, val)
		}
	}
	for _, e := range extra {
		c, v = append(c, e[0]), append(v, e[1])
	}
	return strings.Join(c, ", "), strings.Join(v, ", ")
}

// insUnnest is u's fields as arrays from parameter $first on, unnested
// with the ordinality ord: "unnest($1::integer[], …) WITH ORDINALITY AS
// u(shard, …, ord)".
func insUnnest(first int, ord string) string {
	var arrs, names []string
	for i, f := range insFields {
		arrs = append(arrs, fmt.Sprintf("$%d::%s[]", first+i, f.typ))
		names = append(names, f.name)
	}
	return "unnest(" + strings.Join(arrs, ", ") + ") WITH ORDINALITY AS u(" + strings.Join(names, ", ") + ", " + ord + ")"
}

// insScalars is u's fields as scalar parameters from $1 on: "$1::integer
// AS shard, …".
func insScalars() string {
	var fs []string
	for i, f := range insFields {
		fs = append(fs, fmt.Sprintf("$%d::%s AS %s", 1+i, f.typ, f.name))
	}
	return strings.Join(fs, ", ")
}

// jobColumns are the columns a full read selects (scanJob); claimColumns,
// qualified by the alias j, those a claim returns (scanClaimed).
var (
	jobColumns   = columnList("", false)
	claimColumns = columnList("j.", true)
)

func columnList(prefix string, claim bool) string {
	var b strings.Builder
	for _, c := range jobCols {
		if claim && !c.claim {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(prefix + c.name)
	}
	return b.String()
}

// jobScan is a reusable scan target for jobCols: the columns that fit
// store.JobRow's types land there directly, the nullable ones here first.
type jobScan struct {
	row                                          store.JobRow
	key, lease, timeout, wf                      pgtype.Int8
	task, lastErr, errType, errStack             pgtype.Text
	worker, uniqueKey, queue                     pgtype.Text
	heartbeat, created, started, completed, next pgtype.Timestamptz
	dests                                        []any
}

// newJobScan returns a scan target for the full row or, with claim, for
// a claim's columns.
func newJobScan(claim bool) *jobScan {
	s := new(jobScan)
	for _, c := range jobCols {
		if !claim || c.claim {
			s.dests = append(s.dests, c.dest(s))
		}
	}
	return s
}

// scan reads one row into s.row.
func (s *jobScan) scan(r pgx.Row) error {
	s.row = store.JobRow{}
	if err := r.Scan(s.dests...); err != nil {
		return err
	}
	s.row.PartitionKey, s.row.HasPartitionKey = s.key.Int64, s.key.Valid
	s.row.Lease = s.lease.Int64
	s.row.TimeoutMS = s.timeout.Int64
	s.row.Workflow, s.row.HasWorkflow = s.wf.Int64, s.wf.Valid
	s.row.Task, s.row.LastError, s.row.ErrorType, s.row.ErrorStack = s.task.String, s.lastErr.String, s.errType.String, s.errStack.String
	s.row.WorkerID, s.row.UniqueKey, s.row.Queue = s.worker.String, s.uniqueKey.String, s.queue.String
	s.row.Heartbeat, s.row.CreatedAt, s.row.StartedAt = toTime(s.heartbeat), toTime(s.created), toTime(s.started)
	s.row.CompletedAt, s.row.NextRetryAt = toTime(s.completed), toTime(s.next)
	return nil
}

// scanJob reads one full row (jobColumns).
func scanJob(r pgx.Row) (*store.Job, error) {
	s := newJobScan(false)
	if err := s.scan(r); err != nil {
		return nil, err
	}
	return s.row.Job(), nil
}
