package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/queuemax/queuemax/runtime/store"
)

var (
	// sqlClaim claims a batch of the default queue's jobs in one
	// statement, the claim of a shard whose pending jobs are all in the
	// default queue (the probe says so). The subquery walks idx_qm_ready
	// in order (priority DESC, id), so it stops after LIMIT rows instead
	// of sorting the shard.
	sqlClaim = sqlClaimHead + sqlClaimTail
	// sqlClaimTail takes nothing while the default queue is paused,
	// tested once in the LIMIT (as a WHERE term SQLite would test it at
	// every row, and walk the whole paused backlog).
	sqlClaimTail = ` ORDER BY priority DESC, id
			LIMIT CASE WHEN '` + store.DefaultQueue + `' NOT IN (SELECT name FROM qm_queues WHERE paused_at IS NOT NULL) THEN ?4 ELSE 0 END)
		RETURNING ` + claimColumns
)

const (
	// sqlUniqueHolder finds the job holding a key, through idx_qm_unique
	// (same predicate).
	sqlUniqueHolder = `SELECT id FROM fila WHERE unique_key = ?
		AND unique_key IS NOT NULL AND instr(unique_states, ',' || status || ',') > 0`
	// sqlPromote makes scheduled jobs whose time has come ready; it reads
	// only the small partial index idx_qm_due.
	sqlPromote = `UPDATE fila SET status = 'pending' WHERE status = 'scheduled' AND next_retry_at <= ?`
	// sqlClaimSet is what a claim writes; sqlClaimHead selects the ready
	// jobs, and sqlClaim below completes it.
	sqlClaimSet = `UPDATE fila SET status = 'processing', worker_id = ?1, heartbeat = ?2, started_at = ?2,
		tentativas = tentativas + 1, lease = ?3, completed_at = NULL, cancel_requested = 0`
	sqlClaimHead = sqlClaimSet + `
		WHERE id IN (SELECT id FROM ` + fromReady + ` WHERE ` + sqlReadyDefault + `
			AND (next_retry_at IS NULL OR next_retry_at <= ?2)`
	// sqlHasReady is the read-only probe run before taking the write lock:
	// are jobs of the default queue pending, are scheduled ones due (then
	// the claim promotes them first), are jobs of named queues pending
	// (then the claim takes the per-queue form, claimMixedSQL)? One seek
	// of a partial index each.
	sqlHasReady = `SELECT EXISTS (SELECT 1 FROM ` + fromReady + ` WHERE ` + sqlReadyDefault + `),
		EXISTS (SELECT 1 FROM fila WHERE status = 'scheduled' AND next_retry_at <= ?),
		EXISTS (SELECT 1 FROM fila WHERE ` + sqlReadyNamed + `)`
	sqlCompleteDelete = `DELETE FROM fila WHERE id = ? AND lease = ? AND status = 'processing' AND (? = '' OR worker_id = ?)`
	sqlCompleteKeep   = `UPDATE fila SET status = 'completed', result = ?, completed_at = ?, worker_id = NULL,
		heartbeat = NULL, lease = NULL, last_error = NULL, error_type = NULL, error_stack = NULL
		WHERE id = ? AND lease = ? AND status = 'processing' AND (? = '' OR worker_id = ?)`
	sqlCountProcessed = `UPDATE shard_metadata SET total_jobs_processed = total_jobs_processed + ? WHERE shard_id = ?`
	sqlCountFailed    = `UPDATE shard_metadata SET total_jobs_failed = total_jobs_failed + ? WHERE shard_id = ?`
	// sqlFailRetry schedules a retry (?9 = 1: a snooze, which gives the
	// attempt back), or ends the job cancelled when a cancel was requested
	// while it ran.
	sqlFailRetry = `UPDATE fila SET status = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE ?1 END,
		next_retry_at = CASE WHEN cancel_requested = 1 THEN NULL ELSE ?2 END,
		completed_at = CASE WHEN cancel_requested = 1 THEN ?8 END,
		last_error = CASE WHEN ?9 = 1 THEN last_error ELSE ?3 END,
		error_type = CASE WHEN ?9 = 1 THEN error_type ELSE ?4 END,
		error_stack = CASE WHEN ?9 = 1 THEN error_stack ELSE ?5 END,
		tentativas = max(tentativas - ?9, 0), snoozes = snoozes + ?9,
		worker_id = NULL, heartbeat = NULL, lease = NULL
		WHERE id = ?6 AND lease = ?7 AND status = 'processing' AND (?10 = '' OR worker_id = ?10)`
	sqlFailCancel = `UPDATE fila SET status = 'cancelled', completed_at = ?, last_error = ?, error_type = ?, error_stack = ?,
		worker_id = NULL, heartbeat = NULL, lease = NULL
		WHERE id = ? AND lease = ? AND status = 'processing' AND (? = '' OR worker_id = ?)`
	sqlFailDead = `UPDATE fila SET status = 'failed', completed_at = ?, last_error = ?, error_type = ?, error_stack = ?,
		worker_id = NULL, heartbeat = NULL, lease = NULL
		WHERE id = ? AND lease = ? AND status = 'processing' AND (? = '' OR worker_id = ?)
		RETURNING payload, task, tentativas, metadata`
	sqlInsertDLQ = `INSERT INTO dead_letter_queue (original_job_id, payload, error, error_type, failed_at, shard_id,
		task, attempts, error_stack, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlHeartbeat = `UPDATE fila SET heartbeat = ? WHERE id = ? AND lease = ? AND status = 'processing' AND (? = '' OR worker_id = ?)
		RETURNING cancel_requested`
	// Set-based acknowledgements of a batch on one shard (ackset.go): one
	// fence read of the batch's processing rows, then one statement per
	// kind of change over the ids whose lease held. ?1 is a JSON array of
	// row ids.
	sqlFence = `SELECT id, lease, worker_id, cancel_requested FROM fila
		WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'processing'`
	sqlDeleteIDs    = `DELETE FROM fila WHERE id IN (SELECT value FROM json_each(?1))`
	sqlHeartbeatIDs = `UPDATE fila SET heartbeat = ?2 WHERE id IN (SELECT value FROM json_each(?1))`
	// Failures of a batch: ?1 is a JSON array with one array per job
	// whose lease held, unpacked by the CTEs below (texts are hex, so that
	// any bytes survive the trip through JSON exactly; see failRows).
	failRetryRows = `WITH u AS (SELECT e.value ->> 0 AS id, e.value ->> 1 AS status, e.value ->> 2 AS next,
		CAST(unhex(e.value ->> 3) AS TEXT) AS err, CAST(unhex(e.value ->> 4) AS TEXT) AS etype,
		CAST(unhex(e.value ->> 5) AS TEXT) AS stack, e.value ->> 6 AS at, e.value ->> 7 AS snooze FROM json_each(?1) e) `
	failEndRows = `WITH u AS (SELECT e.key AS k, e.value ->> 0 AS id, e.value ->> 1 AS status,
		CAST(unhex(e.value ->> 2) AS TEXT) AS err, CAST(unhex(e.value ->> 3) AS TEXT) AS etype,
		CAST(unhex(e.value ->> 4) AS TEXT) AS stack, e.value ->> 5 AS at FROM json_each(?1) e) `
	// Completions of a batch, the fence and the write in one statement
	// each: ?1 is a JSON array of [id, lease, worker (hex)] rows (then, to
	// keep the row, its result (hex, or null) and completed_at); a row is
	// written only while it is processing under that lease (and worker,
	// when one is given), and RETURNING says which were.
	completeRows = `WITH u AS (SELECT e.value ->> 0 AS id, e.value ->> 1 AS lease, CAST(unhex(e.value ->> 2) AS TEXT) AS worker,
		CAST(unhex(e.value ->> 3) AS TEXT) AS result, e.value ->> 4 AS at FROM json_each(?1) e) `
	sqlCompleteDeleteSet = completeRows + `DELETE FROM fila WHERE id IN (SELECT f.id FROM u JOIN fila f ON f.id = u.id
			WHERE f.lease = u.lease AND f.status = 'processing' AND (u.worker = '' OR f.worker_id = u.worker))
		RETURNING id`
	sqlCompleteKeepSet = completeRows + `UPDATE fila SET status = 'completed', result = u.result, completed_at = u.at, worker_id = NULL,
			heartbeat = NULL, lease = NULL, last_error = NULL, error_type = NULL, error_stack = NULL
		FROM u WHERE fila.id = u.id AND fila.lease = u.lease AND fila.status = 'processing'
			AND (u.worker = '' OR fila.worker_id = u.worker)
		RETURNING fila.id`
	// sqlFailRetrySet is sqlFailRetry for a batch.
	sqlFailRetrySet = failRetryRows + `UPDATE fila SET status = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE u.status END,
		next_retry_at = CASE WHEN cancel_requested = 1 THEN NULL ELSE u.next END,
		completed_at = CASE WHEN cancel_requested = 1 THEN u.at END,
		last_error = CASE WHEN u.snooze = 1 THEN last_error ELSE u.err END,
		error_type = CASE WHEN u.snooze = 1 THEN error_type ELSE u.etype END,
		error_stack = CASE WHEN u.snooze = 1 THEN error_stack ELSE u.stack END,
		tentativas = max(tentativas - u.snooze, 0), snoozes = snoozes + u.snooze,
		worker_id = NULL, heartbeat = NULL, lease = NULL
		FROM u WHERE fila.id = u.id`
	// sqlFailDLQSet copies the batch's dead jobs (status 'failed') to the
	// dead-letter queue, in item order, before sqlFailEndSet ends them;
	// ?2 is the shard index.
	sqlFailDLQSet = failEndRows + `INSERT INTO dead_letter_queue (original_job_id, payload, error, error_type, failed_at, shard_id,
			task, attempts, error_stack, metadata)
		SELECT f.id, f.payload, u.err, u.etype, u.at, ?2, f.task, f.tentativas, u.stack, f.metadata
		FROM u JOIN fila f ON f.id = u.id WHERE u.status = 'failed' ORDER BY u.k`
	// sqlFailEndSet is sqlFailDead and sqlFailCancel for a batch.
	sqlFailEndSet = failEndRows + `UPDATE fila SET status = u.status, completed_at = u.at, last_error = u.err,
		error_type = u.etype, error_stack = u.stack, worker_id = NULL, heartbeat = NULL, lease = NULL
		FROM u WHERE fila.id = u.id`
	// sqlRelease gives a job back unspent; one asked to cancel ends
	// cancelled, finished at its last heartbeat.
	sqlRelease = `UPDATE fila SET status = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'pending' END,
		completed_at = CASE WHEN cancel_requested = 1 THEN coalesce(heartbeat, started_at) END,
		tentativas = max(tentativas - 1, 0), worker_id = NULL,
		heartbeat = NULL, lease = NULL WHERE id = ? AND lease = ? AND status = 'processing' AND (? = '' OR worker_id = ?)`
	// sqlCancel cancels a waiting job at once, or flags a running one.
	sqlCancel = `UPDATE fila SET
		status = CASE WHEN status = 'processing' THEN status ELSE 'cancelled' END,
		completed_at = CASE WHEN status = 'processing' THEN completed_at ELSE ?1 END,
		cancel_requested = CASE WHEN status = 'processing' THEN 1 ELSE cancel_requested END
		WHERE id = ?2 AND status IN ('pending', 'scheduled', 'processing')
		RETURNING status`
)

// stmts are one shard writer's prepared statements. With a single writer
// connection, tx.StmtContext reuses them without re-preparing.
type stmts struct {
	insert, promote, claim, completeDelete, completeKeep,
	failRetry, failDead, failCancel, insertDLQ, heartbeat, release,
	countProcessed, countFailed,
	fence, deleteIDs, completeDeleteSet, completeKeepSet, heartbeatIDs, failRetrySet, failDLQSet, failEndSet *sql.Stmt
	// completeDeleteLite and completeKeepLite acknowledge plain rounds (acklite.go).
	completeDeleteLite, completeKeepLite *sql.Stmt
	// insertPlain is the one-row insert of a plain job (insertplain.go).
	insertPlain *sql.Stmt
	// insertUnique and uniqueHolder serve unique jobs only.
	insertUnique, uniqueHolder *sql.Stmt

	// insertRows are the multi-row inserts, one per insertChunks size;
	// insertPlainRows the same for plain rows (insertplain.go).
	insertRows, insertPlainRows []*sql.Stmt

	// hasReady is the probe, prepared on the reader pool (database/sql
	// prepares it once per reader connection).
	hasReady *sql.Stmt

	// claimTasks holds claim statements filtered by n task names and q
	// queues, the default queue at position d (key {n, q, d}, q = 0: no
	// queue filter; d = skipVariant or mixedVariant: claimMixedSQL),
	// prepared on first use: parsing the claim costs more than running it.
	mu         sync.Mutex
	claimTasks map[[3]int]*sql.Stmt
}

// claimFor returns the claim statement filtered by n task names and, when
// q > 0, capped per queue for q queues, the default queue at position def
// (see claimQueuesSQL), or, for def mixedVariant or skipVariant, the
// per-queue claim (claimMixedSQL), preparing it on w the first time.
func (s *stmts) claimFor(ctx context.Context, w *sql.DB, n, q, def int) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q == 0 && def != skipVariant && def != mixedVariant {
		def = -1
	}
	key := [3]int{n, q, def}
	if st, ok := s.claimTasks[key]; ok {
		return st, nil
	}
	text := claimSQLFor(n)
	switch {
	case def == skipVariant:
		text = claimMixedSQL(n, true)
	case def == mixedVariant:
		text = claimMixedSQL(n, false)
	case q > 0:
		text = claimQueuesSQL(n, q, def)
	}
	st, err := w.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	if s.claimTasks == nil {
		s.claimTasks = make(map[[3]int]*sql.Stmt)
	}
	s.claimTasks[key] = st
	return st, nil
}

// claimSQLFor returns the claim of the default queue's jobs restricted to
// n task names, bound as ?5 … ?n+4.
func claimSQLFor(n int) string {
	return sqlClaimHead + taskFilterSQL(n) + sqlClaimTail
}

// taskFilterSQL restricts a claim to n task names bound as ?5 … ?n+4 (none
// when n is 0).
func taskFilterSQL(n int) string {
	if n == 0 {
		return ""
	}
	ph := make([]string, n)
	for i := range ph {
		ph[i] = fmt.Sprintf("?%d", i+5)
	}
	// A job without a task (NULL, as queue-max writes it) matches "".
	return ` AND coalesce(task, '') IN (` + strings.Join(ph, ", ") + `)`
}

func (s *stmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.insert, sqlInsert}, {&s.promote, sqlPromote}, {&s.claim, sqlClaim},
		{&s.completeDelete, sqlCompleteDelete}, {&s.completeKeep, sqlCompleteKeep},
		{&s.failRetry, sqlFailRetry}, {&s.failDead, sqlFailDead}, {&s.insertDLQ, sqlInsertDLQ},
		{&s.heartbeat, sqlHeartbeat}, {&s.release, sqlRelease}, {&s.failCancel, sqlFailCancel},
		{&s.countProcessed, sqlCountProcessed}, {&s.countFailed, sqlCountFailed},
		{&s.fence, sqlFence}, {&s.deleteIDs, sqlDeleteIDs}, {&s.completeDeleteSet, sqlCompleteDeleteSet}, {&s.completeKeepSet, sqlCompleteKeepSet}, {&s.heartbeatIDs, sqlHeartbeatIDs},
		{&s.failRetrySet, sqlFailRetrySet}, {&s.failDLQSet, sqlFailDLQSet}, {&s.failEndSet, sqlFailEndSet},
		{&s.insertUnique, sqlInsertUnique}, {&s.uniqueHolder, sqlUniqueHolder},
		{&s.completeDeleteLite, sqlCompleteDeleteLite}, {&s.completeKeepLite, sqlCompleteKeepLite}, {&s.insertPlain, plainRowsSQL(1)},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			return err
		}
		*p.dst = st
	}
	for _, n := range insertChunks {
		st, err := db.PrepareContext(ctx, insertRowsSQL(n))
		if err != nil {
			return err
		}
		s.insertRows = append(s.insertRows, st)
		if st, err = db.PrepareContext(ctx, plainRowsSQL(n)); err != nil {
			return err
		}
		s.insertPlainRows = append(s.insertPlainRows, st)
	}
	return nil
}

// prepareReader prepares the statements that run on the reader pool r.
func (s *stmts) prepareReader(ctx context.Context, r *sql.DB) error {
	st, err := r.PrepareContext(ctx, sqlHasReady)
	if err != nil {
		return err
	}
	s.hasReady = st
	return nil
}

func (s *stmts) close() error {
	var errs []error
	all := append([]*sql.Stmt{s.insert, s.promote, s.claim, s.completeDelete, s.completeKeep,
		s.failRetry, s.failDead, s.failCancel, s.insertDLQ, s.heartbeat, s.release, s.hasReady,
		s.countProcessed, s.countFailed, s.fence, s.deleteIDs, s.completeDeleteSet, s.completeKeepSet, s.heartbeatIDs,
		s.failRetrySet, s.failDLQSet, s.failEndSet,
		s.insertUnique, s.uniqueHolder, s.completeDeleteLite, s.completeKeepLite, s.insertPlain}, append(s.insertRows, s.insertPlainRows...)...)
	s.mu.Lock()
	for _, st := range s.claimTasks {
		all = append(all, st)
	}
	s.claimTasks = nil
	s.mu.Unlock()
	for _, st := range all {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
