package pgstore

import "strings"

// Completing workflow steps set-based. The triggers of workflow_schema.go
// end a step row by row: for each completed step a chain of three PL/pgSQL
// functions and seven statements (its end, its bound keys, its
// dependents' counts, the release, its workflow), ~110–130 µs of server
// CPU per step. The acknowledgement statement (sqlComplete) now does the
// same for the steps it completes in a few set-based statements of its
// own: one update of the ended steps, one of their dependents (counted
// off, and made ready when it was their last dependency), one of the
// released jobs (made claimable, their bound keys filled in) and one of
// the workflows, the ends among them recorded in wf_ends for their events
// (since migration 18), and one ready notification if it released any
// (since migration 17; jobs_ready skips its rows).
//
// It marks its statement (queuemax.wf_ack set to the statement's start
// time, which the statements of its triggers share) so that the row
// triggers skip the completions it handles itself: a step's job row
// completed or deleted by the statement, and the step rows it ends as
// completed. Everything else still goes through the triggers: failures,
// cancels, orphan recovery, other writers, and a dependent whose last
// dependency completed but that another one had blocked (its cancel
// cascades down its branch as before).
var workflowAckMigration = migration{
	name: "workflows: acknowledgements end steps and release dependents set-based",
	stmts: []string{
		`CREATE OR REPLACE TRIGGER jobs_wf_end AFTER UPDATE OF status ON {s}.jobs
			FOR EACH ROW WHEN (NEW.wf_id IS NOT NULL AND NEW.status IN ('completed', 'failed', 'cancelled')
				AND NOT (NEW.status = 'completed' AND ` + wfAcked + `))
			EXECUTE FUNCTION {s}.wf_job_end()`,
		`CREATE OR REPLACE TRIGGER jobs_wf_gone AFTER DELETE ON {s}.jobs
			FOR EACH ROW WHEN (OLD.wf_id IS NOT NULL AND NOT (OLD.status = 'processing' AND ` + wfAcked + `))
			EXECUTE FUNCTION {s}.wf_job_gone()`,
		`CREATE OR REPLACE TRIGGER wf_steps_end AFTER UPDATE OF state ON {s}.wf_steps
			FOR EACH ROW WHEN (OLD.state IN ('waiting', 'ready') AND NEW.state IN ('completed', 'failed', 'cancelled')
				AND NOT (NEW.state = 'completed' AND ` + wfAcked + `))
			EXECUTE FUNCTION {s}.wf_step_end()`,
	},
}

// workflowFillMigration leaves room in the pages of the step and workflow
// rows: each is updated in place once or twice after its insert (a
// dependent counted off and released, a step ended, a workflow counted
// down), none of them in an indexed column, so with a page's free space
// PostgreSQL writes each update as a heap-only tuple on the same page
// instead of a new entry in every index of the table. Tables fill new
// pages to 70%; pages written before keep theirs.
var workflowFillMigration = migration{
	version: 15,
	name:    "workflows: room for the step and workflow rows' updates in their pages",
	stmts: []string{
		`ALTER TABLE {s}.wf_steps SET (fillfactor = 70)`,
		`ALTER TABLE {s}.workflows SET (fillfactor = 70)`,
	},
}

// sqlComplete's two forms: a lone acknowledgement leaves the steps to the
// triggers, as the statement with the workflow part costs ~0.5 ms more to
// plan and PostgreSQL plans it afresh for a one-element array each time
// (custom plans: +0.4 ms of server CPU per plain job in
// BenchmarkClaimCompleteOne); batches end them set-based (a threshold of 8
// instead of 2 left more steps to the triggers: 69 against 62 µs per job
// in the bench's workflow completion).
var (
	plainAck = strings.NewReplacer("{wfmark}", "true", "{wfack}", "", "{wfnotify}", "")
	wfAck    = strings.NewReplacer("{wfmark}", sqlWfAckMark, "{wfack}", sqlWfAck, "{wfnotify}", sqlWfNotify)
)

// minWfAck is the smallest batch acknowledged with the workflow part.
const minWfAck = 2

// completeSQL returns the acknowledgement statement for a batch of n.
func (s *Store) completeSQL(n int) string {
	if n >= minWfAck {
		return s.q.completeWf
	}
	return s.q.complete
}

// wfAcked is true in a trigger's WHEN condition for a row written by the
// acknowledgement statement itself (not by a trigger it set off).
const wfAcked = `pg_trigger_depth() = 0 AND current_setting('queuemax.wf_ack', true) IS NOT DISTINCT FROM statement_timestamp()::text`

// sqlWfAckMark marks the acknowledgement statement for wfAcked; it is
// evaluated before any row is written (the statement's lock step, which
// every write waits for).
const sqlWfAckMark = `set_config('queuemax.wf_ack', statement_timestamp()::text, true)`

// sqlWfAck are sqlComplete's common table expressions that end the
// completed steps of done (id, wf_id, result, at) and release their
// dependents; what the triggers wf_job_end/wf_job_gone, wf_step_end and
// wf_release do row by row. A dependent's row is updated once however
// many of its dependencies the batch completes, with a re-read of its
// latest version under concurrent acknowledgements (READ COMMITTED), so
// the counts stay exact. Every row is looked up by its key from an
// array (= ANY): the step tables are small and rarely analysed while a
// burst of workflows fills them, and a join would be planned as a
// sequential scan of the whole table per acknowledgement.
const sqlWfAck = `
	se AS (UPDATE {s}.wf_steps t SET state = 'completed', result = w.result, ended_at = w.at, reason = NULL
		FROM done w WHERE w.wf_id IS NOT NULL AND t.job_id = w.id AND t.state IN ('waiting', 'ready')
		RETURNING t.job_id, t.wf_id, t.result, t.ended_at),
	bd AS (SELECT b.job, jsonb_object_agg(b.param, coalesce(se.result::jsonb, 'null'::jsonb)) AS p
		FROM {s}.wf_binds b JOIN se ON b.dep = se.job_id GROUP BY b.job),
	bx AS (DELETE FROM {s}.wf_binds b USING se WHERE b.dep = se.job_id),
	dp AS (SELECT e.job, count(*)::int AS n FROM {s}.wf_edges e JOIN se ON e.dep = se.job_id GROUP BY e.job),
	wt AS (UPDATE {s}.wf_steps t SET waits = t.waits - dp.n,
			state = CASE WHEN t.state = 'waiting' AND t.waits = dp.n AND t.blocked IS NULL THEN 'ready' ELSE t.state END
		FROM dp WHERE t.job_id = ANY(ARRAY(SELECT job FROM dp)) AND t.job_id = dp.job
		RETURNING t.job_id, t.state = 'ready' AND t.waits = 0 AS go, t.run_at),
	rj AS (UPDATE {s}.jobs j SET
			payload = CASE WHEN bd.p IS NULL THEN j.payload ELSE (j.payload::jsonb || bd.p)::json END,
			status = CASE WHEN NOT wt.go THEN j.status WHEN wt.run_at > now() THEN 'scheduled' ELSE 'pending' END,
			next_retry_at = CASE WHEN NOT wt.go THEN j.next_retry_at WHEN wt.run_at > now() THEN wt.run_at END
		FROM wt LEFT JOIN bd ON bd.job = wt.job_id
		WHERE j.id = wt.job_id AND (wt.go OR bd.p IS NOT NULL) AND ` + wfWaitingJobOf + `
		RETURNING j.status = 'pending' AS ready),
	nt AS (SELECT pg_notify((parse_ident('{q}'))[1] || '.jobs', '') FROM (SELECT 1 FROM rj WHERE ready LIMIT 1) r),
	wc AS (SELECT wf_id, count(*)::int AS n, max(job_id) AS last, max(ended_at) AS at FROM se GROUP BY wf_id),
	wu AS (UPDATE {s}.workflows w SET unended = w.unended - wc.n,
			status = CASE WHEN w.unended = wc.n THEN
				CASE WHEN w.cancelled THEN 'cancelled' WHEN w.bad > 0 THEN 'failed' ELSE 'completed' END
				ELSE w.status END,
			finished_at = CASE WHEN w.unended = wc.n THEN wc.at ELSE w.finished_at END,
			finisher = CASE WHEN w.unended = wc.n THEN wc.last ELSE w.finisher END
		FROM wc WHERE w.id = wc.wf_id RETURNING w.id, w.unended = 0 AS ended),
	we AS (INSERT INTO {s}.wf_ends (id) SELECT id FROM wu WHERE ended ON CONFLICT DO NOTHING),`

// sqlWfNotify runs sqlWfAck's nt: the one ready notification of the
// dependents the acknowledgement released (jobs_ready skips its rows). A
// one-time filter, evaluated once whatever done holds.
const sqlWfNotify = ` WHERE (SELECT count(*) FROM nt) >= 0`

// wfWaitingJobOf is wfWaitingJob for the jobs row aliased j.
const wfWaitingJobOf = `(j.status = 'scheduled' AND j.next_retry_at IS NULL) IS TRUE`
