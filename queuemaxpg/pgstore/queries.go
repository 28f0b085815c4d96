package pgstore

import (
	"fmt"
	"strings"
)

// queries holds the hot-path statements, built once per Store for its
// schema and clock mode. pgx prepares and caches each on first use per
// connection, so later calls cost one round trip.
type queries struct {
	insert, insertOne, complete, fail, heartbeat, release string
	// completeWf is complete with the workflow steps ended set-based
	// (workflow_ack.go).
	completeWf string
	// insertQuiet and insertOneQuiet are insert and insertOne without
	// the notification (see notify.go).
	insertQuiet, insertOneQuiet string
	// insertUnique inserts one unique job (unique.go); insertUniqueQuiet
	// without the notification.
	insertUnique, insertUniqueQuiet string
	// claim is indexed by [filtered by tasks][filtered by shard], and
	// claimQueues (capped per queue, see claimQueuesSQL) the same way.
	claim, claimQueues, claimSkip [2][2]string // claimSkip: see limits_queue.go
	// nextIDs takes $1 ids from the jobs sequence, for COPY (copy.go).
	nextIDs string
	// copy is the binary COPY into the jobs table (copy.go).
	copy string
	// insertWorkflow stores a workflow (workflow.go).
	insertWorkflow string
}

// The schema's placeholders in the statement texts: {s} the quoted schema,
// {q} the same as a string literal's text (inside '…').
//
// Clock placeholders in the statement texts:
//
//	@now     the current time: the caller's Now in $1 (host clock) or the
//	         database's now() (database clock; $1 is still referenced so
//	         that the statement's parameters do not change with the mode)
//	@rownow  the same for a row of a batch, whose caller's Now is u.at
//	@owner   the fence's worker check: a lease with a WorkerID (u.worker,
//	         NULL when empty) holds only while that worker owns the row
//
// Absolute times reach SQL as microsecond offsets from the caller's Now and
// are written as @now + $k * interval '1 microsecond'.
func expand(q, schema string, host bool) string {
	const owner = "(u.worker IS NULL OR j.worker_id = u.worker)"
	now, rownow := "coalesce(now(), $1::timestamptz)", "coalesce(now(), u.at)"
	if host {
		now, rownow = "$1::timestamptz", "u.at"
	}
	return strings.NewReplacer("{s}", schema, "{q}", strings.ReplaceAll(schema, "'", "''"),
		"@now", now, "@rownow", rownow, "@owner", owner).Replace(q)
}

const us = ` * interval '1 microsecond'`

// claimFilter returns the WHERE conditions every claim statement adds to
// its candidate rows (the task names and shard when filtered, as
// parameters $5 and on; never a paused queue) and the number of the last
// parameter it uses.
func claimFilter(tasks, shard bool) (filter string, n int) {
	n = 4
	if tasks {
		n++
		// "" names jobs stored without a task (NULL, or '' from queue-max).
		filter += fmt.Sprintf(" AND coalesce(task, '') = ANY($%d::text[])", n)
	}
	if shard {
		n++
		filter += fmt.Sprintf(" AND shard = $%d::integer", n)
	}
	return filter + sqlNotPaused, n
}

// claimSQL claims a batch in one statement: the first ready jobs by
// priority then id, and scheduled jobs that have come due (claimed
// directly, with no separate promotion), both skipping rows other claimers
// hold. $1 now, $2 limit, $3 worker, $4 lease, then the task names and the
// shard when filtered, then (skip) the queues to leave out.
//
// While no queue is left out (none paused, no skip list) the ready jobs
// come from one walk of jobs_claim, which stops after $2 rows. A walk of
// jobs_claim that had to step over the jobs of paused or skipped queues
// would cost as much as their backlog (100,000 jobs: 70 ms a claim), so
// then the statement takes them per queue instead (claimHeads): the queues
// with ready jobs, one jobs_claim_queue probe each, and up to $2 of each
// queue not left out, in order. Its cost is bounded by the number of
// queues, whatever waits behind them. A one-time test on the queues table
// picks the form.
func claimSQL(tasks, shard, skip bool) string {
	filter, n := claimFilter(tasks, shard)
	excluded := sqlAnyPaused
	if skip {
		filter += fmt.Sprintf(` AND queue <> ALL($%d::text[])`, n+1)
		excluded = "true"
	}
	local, _ := claimFilter(tasks, shard)
	local = strings.TrimSuffix(local, sqlNotPaused)
	// The ids are gathered into an array so that even a generic plan
	// (LIMIT unknown) updates them by primary key, not by a hash join
	// over the whole table.
	pending := `SELECT id, priority FROM (SELECT id, priority FROM {s}.jobs WHERE status = 'pending'` + filter + `
			AND NOT ` + excluded + `
			ORDER BY priority DESC, id LIMIT $2 FOR UPDATE SKIP LOCKED) p
		UNION ALL`
	if skip {
		pending = ""
	}
	return claimSet + `
	WHERE j.id = ANY(ARRAY(SELECT id FROM (
		` + pending + `
		SELECT c.id, c.priority FROM (` + claimHeads(filter) + `) h
		CROSS JOIN LATERAL (SELECT id, priority FROM {s}.jobs WHERE status = 'pending' AND queue = h.queue` + local + `
			ORDER BY priority DESC, id LIMIT $2 FOR UPDATE SKIP LOCKED) c
		WHERE ` + excluded + `
		UNION ALL
		SELECT id, priority FROM (SELECT id, priority FROM {s}.jobs WHERE status = 'scheduled' AND next_retry_at <= @now` + filter + `
			ORDER BY next_retry_at LIMIT $2 FOR UPDATE SKIP LOCKED) d
	) cand ORDER BY priority DESC, id LIMIT $2))
	RETURNING ` + claimColumns
}

// sqlAnyPaused is true when some queue is paused.
const sqlAnyPaused = `EXISTS (SELECT FROM {s}.queues WHERE paused_at IS NOT NULL)`

// claimHeads lists the queues that have ready jobs and that filter (the
// claim's conditions on queue) lets through: a skip scan of
// jobs_claim_queue, one probe per queue from the first name up.
func claimHeads(filter string) string {
	return `WITH RECURSIVE h(queue) AS (
			(SELECT queue FROM {s}.jobs WHERE status = 'pending' ORDER BY queue LIMIT 1)
			UNION ALL
			SELECT (SELECT queue FROM {s}.jobs WHERE status = 'pending' AND queue > h.queue ORDER BY queue LIMIT 1)
			FROM h WHERE h.queue IS NOT NULL)
		SELECT queue FROM h WHERE queue IS NOT NULL` + queueConds(filter)
}

// queueConds returns filter's conditions on the queue alone.
func queueConds(filter string) string {
	var out string
	for _, c := range strings.Split(filter, " AND ")[1:] {
		if strings.HasPrefix(c, "queue ") {
			out += " AND " + c
		}
	}
	return out
}

// claimSet is what a claim writes into each row it takes.
const claimSet = `UPDATE {s}.jobs j SET status = 'processing', worker_id = $3, heartbeat = @now, started_at = @now,
		attempts = j.attempts + 1, lease = $4, completed_at = NULL, cancel_requested = false`

// sqlQuiet, joined to the rows an insert statement writes, sets
// queuemax.quiet for the statement's transaction before its
// statement-level trigger runs, so that the trigger does not notify.
const sqlQuiet = `, (SELECT set_config('queuemax.quiet', 'on', true)) AS quiet`

// The insert statements' columns and values derive from jobCols
// (insertSelect), their input row u from insFields.
var (
	insCols, insVals = insertSelect(nil)

	// sqlInsert writes a batch of jobs in one statement, in input order
	// (so the returned ids ascend in that order). A job whose run-at
	// offset is positive is stored as scheduled.
	sqlInsert = `INSERT INTO {s}.jobs (` + insCols + `)
		SELECT ` + insVals + `
		FROM ` + insUnnest(1, "ord") + `{quiet}
		ORDER BY u.ord
		RETURNING id`

	// sqlInsertOne is sqlInsert for one job, with scalar parameters in the
	// same order: a group of one (a lone enqueue) skips encoding and
	// unnesting thirteen one-element arrays.
	sqlInsertOne = `INSERT INTO {s}.jobs (` + insCols + `)
		SELECT ` + insVals + `
		FROM (SELECT ` + insScalars() + `) AS u{quiet}
		RETURNING id`
)

const (
	// Every batch statement first locks its rows in id order (a one-time
	// InitPlan over SELECT ... ORDER BY id FOR UPDATE, evaluated before
	// the statement touches any row), so that two batches over the same
	// jobs, in whatever order, never deadlock. Each finds its rows by
	// primary key and joins them to its input linearly: it repeats the ids
	// as j.id = ANY(...), which the planner estimates well, and tests the
	// status as (j.status = 'processing' OR u.id IS NULL) (u.id is never
	// NULL), a join condition, so that the jobs' estimate does not shrink
	// by the status's selectivity and no partial index's predicate
	// matches. With statistics from before a burst (too few processing
	// rows), j.status = 'processing' made the planner scan the
	// jobs_heartbeat index (every processing row of every worker) and,
	// written as a restriction in any form, estimate one matching job, and
	// so loop over the whole input per job: 35 ms for 2,000 acks.
	//
	// sqlComplete acknowledges a batch in one statement: rows without a
	// result are deleted (unless kept, $7), rows with one kept as completed, and the
	// counters bumped; it returns the (id, lease) pairs that held. Workflow
	// steps among them are ended and their dependents released in the same
	// statement (sqlWfAck, workflow_ack.go).
	sqlComplete = `WITH a AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::timestamptz[], $6::text[], $7::boolean[]) AS u(id, lease, result, at, worker, keep)),
	lk AS (SELECT array_agg(id) AS ids, {wfmark} AS mark FROM (SELECT id FROM {s}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE) l),
	d AS (DELETE FROM {s}.jobs j USING a u
		WHERE (SELECT ids FROM lk WHERE mark IS NOT NULL) IS NOT NULL AND j.id = ANY($1::bigint[]) AND j.id = u.id AND j.lease = u.lease AND @owner AND (j.status = 'processing' OR u.id IS NULL) AND u.result IS NULL AND NOT u.keep
		RETURNING j.id, j.shard, u.lease, j.wf_id, NULL::json AS result, now() AS at),
	k AS (UPDATE {s}.jobs j SET status = 'completed', result = u.result::json, completed_at = @rownow, worker_id = NULL,
			heartbeat = NULL, lease = NULL, last_error = NULL, error_type = NULL, error_stack = NULL
		FROM a u WHERE (SELECT ids FROM lk WHERE mark IS NOT NULL) IS NOT NULL AND j.id = ANY($1::bigint[]) AND j.id = u.id AND j.lease = u.lease AND @owner AND (j.status = 'processing' OR u.id IS NULL) AND (u.result IS NOT NULL OR u.keep)
		RETURNING j.id, j.shard, u.lease, j.wf_id, j.result, coalesce(j.completed_at, now()) AS at),
	done AS (SELECT * FROM d UNION ALL SELECT * FROM k),{wfack}
	c AS (INSERT INTO {s}.counters AS c (shard, slot, processed)
		SELECT shard, $5, count(*) FROM done GROUP BY shard
		ON CONFLICT (shard, slot) DO UPDATE SET processed = c.processed + excluded.processed)
	SELECT id, lease FROM done{wfnotify}`

	// sqlFail records a batch of failures in one statement: retries go
	// back to pending or scheduled, dead ones to failed with a dead-letter
	// row, and the failed counter is bumped.
	sqlFail = `WITH a AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[], $4::bigint[], $5::text[], $6::text[],
			$7::text[], $8::timestamptz[], $10::text[], $11::boolean[], $12::boolean[]) AS u(id, lease, dead, delay, err, etype, stack, at, worker, cancel, snooze)),
	lk AS (SELECT array_agg(id) AS ids FROM (SELECT id FROM {s}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE) l),
	r AS (UPDATE {s}.jobs j SET status = CASE WHEN j.cancel_requested THEN 'cancelled' WHEN u.delay > 0 THEN 'scheduled' ELSE 'pending' END,
			next_retry_at = CASE WHEN j.cancel_requested THEN NULL ELSE @rownow + u.delay` + us + ` END,
			completed_at = CASE WHEN j.cancel_requested THEN @rownow END,
			last_error = CASE WHEN u.snooze THEN j.last_error ELSE u.err END,
			error_type = CASE WHEN u.snooze THEN j.error_type ELSE u.etype END,
			error_stack = CASE WHEN u.snooze THEN j.error_stack ELSE u.stack END,
			attempts = CASE WHEN u.snooze THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
			snoozes = j.snoozes + CASE WHEN u.snooze THEN 1 ELSE 0 END,
			worker_id = NULL, heartbeat = NULL, lease = NULL
		FROM a u WHERE NOT u.dead AND NOT u.cancel AND (SELECT ids FROM lk) IS NOT NULL AND j.id = ANY($1::bigint[]) AND j.id = u.id AND j.lease = u.lease AND @owner AND (j.status = 'processing' OR u.id IS NULL)
		RETURNING j.id, u.lease),
	cx AS (UPDATE {s}.jobs j SET status = 'cancelled', completed_at = @rownow, last_error = u.err, error_type = u.etype,
			error_stack = u.stack, worker_id = NULL, heartbeat = NULL, lease = NULL
		FROM a u WHERE u.cancel AND (SELECT ids FROM lk) IS NOT NULL AND j.id = ANY($1::bigint[]) AND j.id = u.id AND j.lease = u.lease AND @owner AND (j.status = 'processing' OR u.id IS NULL)
		RETURNING j.id, u.lease),
	x AS (UPDATE {s}.jobs j SET status = 'failed', completed_at = @rownow, last_error = u.err, error_type = u.etype,
			error_stack = u.stack, worker_id = NULL, heartbeat = NULL, lease = NULL
		FROM a u WHERE u.dead AND NOT u.cancel AND (SELECT ids FROM lk) IS NOT NULL AND j.id = ANY($1::bigint[]) AND j.id = u.id AND j.lease = u.lease AND @owner AND (j.status = 'processing' OR u.id IS NULL)
		RETURNING j.id, u.lease, j.shard, j.payload, j.task, j.attempts, u.err, u.etype, u.stack, @rownow AS at, j.metadata),
	dl AS (INSERT INTO {s}.dead_letters (shard, original_job_id, payload, error, error_type, error_stack, task, attempts, failed_at, metadata)
		SELECT shard, id, payload, err, etype, stack, task, attempts, at, metadata FROM x),
	c AS (INSERT INTO {s}.counters AS c (shard, slot, failed)
		SELECT shard, $9, count(*) FROM x GROUP BY shard
		ON CONFLICT (shard, slot) DO UPDATE SET failed = c.failed + excluded.failed)
	SELECT id, lease FROM r UNION ALL SELECT id, lease FROM x UNION ALL SELECT id, lease FROM cx`

	sqlHeartbeat = `UPDATE {s}.jobs j SET heartbeat = @now
		FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS u(id, lease, worker)
		WHERE cardinality(ARRAY(SELECT id FROM {s}.jobs WHERE id = ANY($2::bigint[]) ORDER BY id FOR UPDATE)) >= 0 AND j.id = ANY($2::bigint[]) AND j.id = u.id AND j.lease = u.lease AND @owner AND (j.status = 'processing' OR u.id IS NULL)
		RETURNING j.id, u.lease, j.cancel_requested`

	sqlRelease = `UPDATE {s}.jobs j SET status = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'pending' END,
			completed_at = CASE WHEN j.cancel_requested THEN coalesce(j.heartbeat, j.started_at) END, attempts = greatest(j.attempts - 1, 0), worker_id = NULL,
			heartbeat = NULL, lease = NULL
		FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS u(id, lease, worker)
		WHERE cardinality(ARRAY(SELECT id FROM {s}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE)) >= 0 AND j.id = ANY($1::bigint[]) AND j.id = u.id AND j.lease = u.lease AND @owner AND (j.status = 'processing' OR u.id IS NULL)
		RETURNING j.id, u.lease`
)

func buildQueries(schema string, host bool) queries {
	loud, quiet := strings.NewReplacer("{quiet}", ""), strings.NewReplacer("{quiet}", sqlQuiet)
	q := queries{
		insert:         expand(loud.Replace(sqlInsert), schema, host),
		insertOne:      expand(loud.Replace(sqlInsertOne), schema, host),
		insertQuiet:    expand(quiet.Replace(sqlInsert), schema, host),
		insertOneQuiet: expand(quiet.Replace(sqlInsertOne), schema, host),
		complete:       expand(plainAck.Replace(sqlComplete), schema, host),
		completeWf:     expand(wfAck.Replace(sqlComplete), schema, host),
		fail:           expand(sqlFail, schema, host),
		heartbeat:      expand(sqlHeartbeat, schema, host),
		release:        expand(sqlRelease, schema, host),
	}
	q.copy = copySQL(schema, host)
	q.insertWorkflow = expand(sqlInsertWorkflow, schema, host)
	q.nextIDs = `SELECT array_agg(nextval('` + strings.ReplaceAll(schema, "'", "''") + `.jobs_id_seq')) FROM generate_series(1, $1)`
	// Unique jobs only; see unique.go.
	q.insertUnique = expand(loud.Replace(sqlInsertUnique), schema, host)
	q.insertUniqueQuiet = expand(quiet.Replace(sqlInsertUnique), schema, host)
	for t := range 2 {
		for sh := range 2 {
			q.claim[t][sh] = expand(claimSQL(t == 1, sh == 1, false), schema, host)
			q.claimQueues[t][sh] = expand(claimQueuesSQL(t == 1, sh == 1), schema, host)
			q.claimSkip[t][sh] = expand(claimSQL(t == 1, sh == 1, true), schema, host)
		}
	}
	return q
}
