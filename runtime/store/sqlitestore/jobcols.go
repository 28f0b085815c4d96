package sqlitestore

import (
	"database/sql"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// colID names one fila column: its index in jobCols.
type colID uint8

const (
	colRowID colID = iota
	colPartitionKey
	colPayload
	colStatus
	colPriority
	colAttempts
	colMaxAttempts
	colRetryDelay
	colLastError
	colErrorType
	colErrorStack
	colWorkerID
	colHeartbeat
	colCreatedAt
	colStartedAt
	colCompletedAt
	colNextRetryAt
	colTask
	colLease
	colResult
	colMetadata
	colCancelRequested
	colSnoozes
	colTimeoutMS
	colTags
	colQueue
	colUniqueKey
	colWorkflow
	colProgress
	colRetryDelayMS
	colShard
	colBatchID
	colBatchNext
	colUniqueStates
)

// insertion: which inserts write a column.
type insertion uint8

const (
	insNone     insertion = iota
	insAll                // every insert (sqlInsert, the multi-row, plain and workflow inserts)
	insUnique             // the unique insert only (sqlInsertUnique)
	insWorkflow           // a workflow's step jobs only (stepJobsSQL)
)

// jobCol is one column of the fila table as the store reads and writes
// it. jobCols is the one list of them (queue-max 0.2.0's columns keep
// their names: pagina_id, tentativas, max_tentativas, text timestamps):
// what a full read selects (jobColumns, shardDB.cols), what a claim
// returns (claimColumns), where a scan puts each (jobScan), and the
// column lists and values of every insert (insertNames, rowVals.put, the
// plain rows' literals) all derive from it.
type jobCol struct {
	id   colID
	name string
	// dest is where a scan stores the column; nil: no read selects it.
	dest func(*jobScan) any
	// claim: a claim returns it (what a run needs; the columns a claim
	// sets are known without reading them back).
	claim bool
	ins   insertion
	// plain is the column's SQL literal in a plain row (insertplain.go),
	// "" when the plain row binds its value.
	plain string
}

// jobCols lists fila's columns, read columns first, in colID order.
var jobCols = []jobCol{
	{colRowID, "id", func(s *jobScan) any { return &s.row.Seq }, true, insNone, ""},
	{colPartitionKey, "pagina_id", func(s *jobScan) any { return &s.key }, true, insAll, "NULL"},
	{colPayload, "payload", func(s *jobScan) any { return &s.row.Payload }, true, insAll, ""},
	{colStatus, "status", func(s *jobScan) any { return &s.row.Status }, false, insAll, "'" + string(store.StatusPending) + "'"},
	{colPriority, "priority", func(s *jobScan) any { return &s.prio }, true, insAll, ""},
	{colAttempts, "tentativas", func(s *jobScan) any { return &s.attempts }, true, insAll, "0"},
	{colMaxAttempts, "max_tentativas", func(s *jobScan) any { return &s.maxAttempts }, true, insAll, ""},
	{colRetryDelay, "retry_delay", func(s *jobScan) any { return &s.retryDelay }, true, insAll, ""},
	{colLastError, "last_error", func(s *jobScan) any { return &s.lastErr }, true, insNone, ""},
	{colErrorType, "error_type", func(s *jobScan) any { return &s.errType }, true, insNone, ""},
	{colErrorStack, "error_stack", func(s *jobScan) any { return &s.errStack }, false, insNone, ""},
	{colWorkerID, "worker_id", func(s *jobScan) any { return &s.worker }, false, insNone, ""},
	{colHeartbeat, "heartbeat", func(s *jobScan) any { return &s.heartbeat }, false, insNone, ""},
	{colCreatedAt, "created_at", func(s *jobScan) any { return &s.created }, true, insAll, ""},
	{colStartedAt, "started_at", func(s *jobScan) any { return &s.started }, false, insNone, ""},
	{colCompletedAt, "completed_at", func(s *jobScan) any { return &s.completed }, false, insNone, ""},
	{colNextRetryAt, "next_retry_at", func(s *jobScan) any { return &s.next }, true, insAll, "NULL"},
	{colTask, "task", func(s *jobScan) any { return &s.task }, true, insAll, ""},
	{colLease, "lease", func(s *jobScan) any { return &s.lease }, false, insNone, ""},
	{colResult, "result", func(s *jobScan) any { return &s.row.Result }, false, insNone, ""},
	{colMetadata, "metadata", func(s *jobScan) any { return &s.row.Metadata }, true, insAll, "NULL"},
	{colCancelRequested, "cancel_requested", func(s *jobScan) any { return &s.cancel }, false, insNone, ""},
	{colSnoozes, "snoozes", func(s *jobScan) any { return &s.snoozes }, true, insNone, ""},
	{colTimeoutMS, "timeout_ms", func(s *jobScan) any { return &s.timeout }, true, insAll, "NULL"},
	{colTags, "tags", func(s *jobScan) any { return &s.tags }, true, insAll, "NULL"},
	{colQueue, "queue", func(s *jobScan) any { return &s.queue }, true, insAll, "'" + store.DefaultQueue + "'"},
	{colUniqueKey, "unique_key", func(s *jobScan) any { return &s.uniqueKey }, false, insUnique, ""},
	{colWorkflow, "wf_id", func(s *jobScan) any { return &s.wf }, true, insWorkflow, ""},
	{colProgress, "progress", func(s *jobScan) any { return &s.row.Progress }, false, insNone, ""},
	{colRetryDelayMS, "retry_delay_ms", func(s *jobScan) any { return &s.retryMS }, true, insAll, "NULL"},
	// Written, never read into a job: the shard is the file's, a staged
	// batch's columns and unique_states are the store's own.
	{colShard, "shard_id", nil, false, insAll, ""},
	{colBatchID, "batch_id", nil, false, insAll, "NULL"},
	{colBatchNext, "batch_next", nil, false, insAll, "NULL"},
	{colUniqueStates, "unique_states", nil, false, insUnique, ""},
}

var (
	// jobColumns is the column list a full read selects (jobScan, full);
	// claimColumns the list a claim returns (jobScan, claim).
	jobColumns   = columnList(func(c jobCol) bool { return c.dest != nil }, nil)
	claimColumns = columnList(func(c jobCol) bool { return c.claim }, nil)
	// insertCols are the columns every insert writes, in order; the
	// unique insert writes uniqueCols, a workflow's step jobs wfCols.
	insertCols = insertList(insAll)
	uniqueCols = insertList(insAll, insUnique)
	wfCols     = insertList(insAll, insWorkflow)
	// insertNames is insertCols' column list.
	insertNames = namesOf(insertCols)
	// plainCols are the insertCols a plain row binds (insertplain.go);
	// the others are the literals jobCol.plain.
	plainCols = func() []colID {
		var ids []colID
		for _, c := range insertCols {
			if jobCols[c].plain == "" {
				ids = append(ids, c)
			}
		}
		return ids
	}()
)

func init() {
	for i, c := range jobCols {
		if c.id != colID(i) {
			panic("sqlitestore: jobCols out of colID order at " + c.name)
		}
	}
}

// columnList returns the names of the columns keep selects, comma
// separated, each as name(c) says (nil: the name itself).
func columnList(keep func(jobCol) bool, name func(jobCol) string) string {
	var b strings.Builder
	for _, c := range jobCols {
		if !keep(c) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if name != nil {
			b.WriteString(name(c))
		} else {
			b.WriteString(c.name)
		}
	}
	return b.String()
}

func insertList(kinds ...insertion) []colID {
	var ids []colID
	for _, c := range jobCols {
		for _, k := range kinds {
			if c.ins == k {
				ids = append(ids, c.id)
			}
		}
	}
	return ids
}

func namesOf(ids []colID) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = jobCols[id].name
	}
	return strings.Join(names, ", ")
}

// readColumnsOf is jobColumns for a file whose fila has the columns in
// have: a column it lacks (a queue-max file opened read-only, not
// migrated) reads as NULL.
func readColumnsOf(have map[string]bool) string {
	return columnList(func(c jobCol) bool { return c.dest != nil }, func(c jobCol) string {
		if have[c.name] {
			return c.name
		}
		return "NULL AS " + c.name
	})
}

// jobScan is a reusable scan target for jobCols: the columns that fit
// store.JobRow's types land there directly, the others (nullable, INTEGER
// flags, text timestamps and tags) here first and are converted by scan.
type jobScan struct {
	row store.JobRow
	// NOT NULL in every file.
	prio, attempts, maxAttempts, retryDelay int64
	key, lease, cancel, snoozes, timeout    sql.NullInt64
	wf, retryMS                             sql.NullInt64
	lastErr, errType, errStack, worker      sql.NullString
	task, tags, queue, uniqueKey            sql.NullString
	heartbeat, created, started, completed  sql.NullString
	next                                    sql.NullString
	dests                                   []any
}

// newJobScan returns a scan target for a full read (jobColumns) or, with
// claim, for a claim's columns (claimColumns).
func newJobScan(claim bool) *jobScan {
	s := new(jobScan)
	s.dests = make([]any, 0, len(jobCols))
	for _, c := range jobCols {
		if c.dest != nil && (!claim || c.claim) {
			s.dests = append(s.dests, c.dest(s))
		}
	}
	return s
}

// scan reads one row of shard sh into s.row.
func (s *jobScan) scan(r scanner, sh int) error {
	s.row = store.JobRow{}
	if err := r.Scan(s.dests...); err != nil {
		return err
	}
	w := &s.row
	w.Shard = sh
	w.PartitionKey, w.HasPartitionKey = s.key.Int64, s.key.Valid
	w.Priority, w.Attempts, w.MaxAttempts = int(s.prio), int(s.attempts), int(s.maxAttempts)
	// retry_delay_ms holds a base that whole seconds (retry_delay, as
	// queue-max keeps it) do not.
	w.RetryDelayMS = s.retryDelay * 1000
	if s.retryMS.Valid {
		w.RetryDelayMS = s.retryMS.Int64
	}
	w.LastError, w.ErrorType, w.ErrorStack = s.lastErr.String, s.errType.String, s.errStack.String
	w.WorkerID, w.Task, w.Queue, w.UniqueKey = s.worker.String, s.task.String, s.queue.String, s.uniqueKey.String
	w.Lease = s.lease.Int64
	w.Heartbeat, w.CreatedAt, w.StartedAt = timeOf(s.heartbeat), timeOf(s.created), timeOf(s.started)
	w.CompletedAt, w.NextRetryAt = timeOf(s.completed), timeOf(s.next)
	w.CancelRequested = s.cancel.Int64 != 0
	w.Snoozes = int(s.snoozes.Int64)
	w.TimeoutMS = s.timeout.Int64
	w.Tags = store.DecodeTags(s.tags.String)
	w.Workflow, w.HasWorkflow = s.wf.Int64, s.wf.Valid
	return nil
}

// timeOf reads a text timestamp (store.FormatTime's, or queue-max's);
// NULL is the zero time.
func timeOf(s sql.NullString) time.Time { return store.ParseTime(s.String) }

// scanJob reads one full row (jobColumns, or shardDB.cols) of shard sh.
func scanJob(r scanner, sh int) (*store.Job, error) {
	s := newJobScan(false)
	if err := s.scan(r, sh); err != nil {
		return nil, err
	}
	return s.row.Job(), nil
}

// rowVals is one row an insert writes: the job and what its columns'
// values depend on, put by put in a column list's order.
type rowVals struct {
	j     *store.InsertParams
	shard int
	// batch is the multi-shard batch the row is staged for ("" for none).
	batch string
	// waits: a workflow step that waits for others, written scheduled
	// without a time (its step row holds its run-at time).
	waits bool
	wf    int64
	// status, next (next_retry_at) and staged (batch_next) are derived
	// from the job by prepare.
	status       store.Status
	next, staged string
}

// prepare derives the row's status and times. A job whose RunAt is after
// Now is stored as scheduled; a row staged for a batch is scheduled,
// never due, its real retry time kept in batch_next until the batch is
// published (batch.go).
func (v *rowVals) prepare() {
	j := v.j
	v.status, v.next = store.StatusPending, ""
	if j.RunAt.After(j.Now) {
		v.status, v.next = store.StatusScheduled, store.FormatTime(j.RunAt)
	}
	v.staged = v.next
	if v.batch != "" {
		v.status, v.next = store.StatusScheduled, stagedNext
	}
	if v.waits {
		v.status, v.next = store.StatusScheduled, ""
	}
}

// put writes the row's value of column c to w.
func (v *rowVals) put(w *argRow, c colID) {
	j := v.j
	switch c {
	case colPartitionKey:
		if j.PartitionKey != nil {
			w.int(*j.PartitionKey)
		} else {
			w.null()
		}
	case colPayload:
		w.text(string(j.Payload))
	case colStatus:
		w.text(string(v.status))
	case colPriority:
		w.int(int64(j.Priority))
	case colAttempts:
		w.int(0)
	case colMaxAttempts:
		w.int(int64(j.MaxAttempts))
	case colRetryDelay:
		w.int(retrySeconds(j.RetryDelay))
	case colCreatedAt:
		w.text(store.FormatTime(j.Now))
	case colNextRetryAt:
		w.textOrNull(v.next)
	case colTask:
		w.textOrNull(j.Task)
	case colMetadata:
		w.textOrNull(string(j.Metadata))
	case colTimeoutMS:
		if j.Timeout > 0 {
			w.int(max(1, j.Timeout.Milliseconds()))
		} else {
			w.null()
		}
	case colTags:
		w.textOrNull(store.EncodeTags(j.Tags))
	case colQueue:
		w.text(store.QueueOf(j.Queue))
	case colUniqueKey:
		w.text(j.Unique.Key)
	case colWorkflow:
		w.int(v.wf)
	case colRetryDelayMS:
		if ms, ok := retryMillis(j.RetryDelay); ok {
			w.int(ms)
		} else {
			w.null()
		}
	case colShard:
		w.int(int64(v.shard))
	case colBatchID:
		w.textOrNull(v.batch)
	case colBatchNext:
		if v.batch == "" {
			w.null()
		} else {
			w.textOrNull(v.staged)
		}
	case colUniqueStates:
		w.text(uniqueStates(j.Unique.States))
	default:
		panic("sqlitestore: no insert value for column " + jobCols[c].name)
	}
}

// putRow writes the row's values of cols, in order, to w.
func (v *rowVals) putRow(w *argRow, cols []colID) {
	v.prepare()
	for _, c := range cols {
		v.put(w, c)
	}
}

// putPlain writes a plain row's bound values (plainCols) to w.
func (v *rowVals) putPlain(w *argRow) {
	for _, c := range plainCols {
		v.put(w, c)
	}
}
