package pgstore

// workflowIndexMigration drops two indexes that every step paid for on
// its hot path, and stops the ready notification's trigger from firing
// once per step released by an acknowledgement:
//   - jobs_wf (the jobs of a workflow): each step's job row added an
//     entry at its insert and another when its release rewrote the row
//     (a non-HOT update, its status indexed). Its three readers, a
//     workflow's cancel and its prune, find the jobs through the step
//     rows (wf_steps' (wf_id, name) key) and the jobs' primary key;
//   - workflows_finisher: each workflow's end and the claim of its end
//     event added an entry. FinishedBy finds a job's workflow through
//     its step row instead, both by primary key;
//   - jobs_ready ran notify_jobs, a PL/pgSQL call, for each dependent an
//     acknowledgement released (~3 µs of server CPU each); the
//     acknowledgement now skips it for the rows it writes itself and
//     notifies once (sqlWfAck's nt).
var workflowIndexMigration = migration{
	version: 17,
	name:    "workflows: no jobs_wf or workflows_finisher index; one ready notification per acknowledgement",
	stmts: []string{
		`DROP INDEX IF EXISTS {s}.jobs_wf`,
		`DROP INDEX IF EXISTS {s}.workflows_finisher`,
		`CREATE OR REPLACE TRIGGER jobs_ready AFTER UPDATE OF status ON {s}.jobs
			FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status IS DISTINCT FROM 'pending'
				AND NOT (NEW.wf_id IS NOT NULL AND ` + wfAcked + `))
			EXECUTE FUNCTION {s}.notify_jobs()`,
	},
}

// wfJobsOf is the jobs of workflow $2 (cancel) by their primary key.
const wfJobsOf = `id = ANY(ARRAY(SELECT job_id FROM {s}.wf_steps WHERE wf_id = $2))`

// workflowEndsMigration keeps the unannounced workflow ends in a table of
// their own, wf_ends, instead of the workflows row's announced flag, and
// replaces workflows_status. A workflow's end rewrote its row into every
// index the new row matched (status changes, so never heap-only):
// workflows_pkey, workflows_status, workflows_finished and
// workflows_unannounced; the claim of its end event (announced = true,
// a column of workflows_unannounced's predicate) rewrote it again into
// the first three. Now the end enters workflows_pkey and
// workflows_finished and inserts the id into wf_ends; the claim deletes
// it from there and leaves the workflows row alone.
//
// workflows_status (status, id) served Workflows filtered by status, which
// orders by creation: it read every workflow of that status and sorted
// them. workflows_running (running ones, in that order) serves the one
// status a listing reads often and an ended row does not enter it.
var workflowEndsMigration = migration{
	version: 18,
	name:    "workflows: unannounced ends in wf_ends; workflows_running for workflows_status",
	stmts: []string{
		`CREATE TABLE IF NOT EXISTS {s}.wf_ends (id bigint PRIMARY KEY)`,
		// (Run again, the column is back with every end announced.)
		`ALTER TABLE {s}.workflows ADD COLUMN IF NOT EXISTS announced boolean NOT NULL DEFAULT true`,
		`INSERT INTO {s}.wf_ends (id) SELECT id FROM {s}.workflows WHERE NOT announced AND status <> 'running' ON CONFLICT DO NOTHING`,
		`DROP INDEX IF EXISTS {s}.workflows_unannounced`,
		`ALTER TABLE {s}.workflows DROP COLUMN IF EXISTS announced`,
		`DROP INDEX IF EXISTS {s}.workflows_status`,
		`CREATE INDEX IF NOT EXISTS workflows_running ON {s}.workflows (created_at, id) WHERE status = 'running'`,
		// wf_step_end as in workflowReleaseByKey, recording the end of
		// the workflow it ends.
		`CREATE OR REPLACE FUNCTION {s}.wf_step_end() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		DECLARE b record; rest integer;
		BEGIN
			IF NEW.state = 'completed' THEN
				FOR b IN SELECT job, param FROM {s}.wf_binds WHERE dep = NEW.job_id LOOP
					UPDATE {s}.jobs SET payload = (payload::jsonb || jsonb_build_object(b.param, coalesce(NEW.result::jsonb, 'null'::jsonb)))::json
					WHERE id = b.job AND ` + wfWaitingJob + `;
				END LOOP;
			END IF;
			DELETE FROM {s}.wf_binds WHERE dep = NEW.job_id;
			UPDATE {s}.wf_steps t SET waits = t.waits - 1,
				blocked = CASE WHEN t.blocked IS NULL AND NEW.state <> 'completed' AND NOT e.settled
					THEN 'step "' || NEW.name || '" ' || CASE NEW.state WHEN 'failed' THEN 'failed' ELSE 'was cancelled' END
						|| coalesce(': ' || NEW.reason, '')
					ELSE t.blocked END
			FROM {s}.wf_edges e WHERE e.dep = NEW.job_id AND t.job_id = e.job;
			UPDATE {s}.workflows SET unended = unended - 1, bad = bad + (NEW.state <> 'completed')::int,
				status = CASE WHEN unended = 1 THEN
					CASE WHEN cancelled THEN 'cancelled' WHEN bad + (NEW.state <> 'completed')::int > 0 THEN 'failed' ELSE 'completed' END
					ELSE status END,
				finished_at = CASE WHEN unended = 1 THEN NEW.ended_at ELSE finished_at END,
				finisher = CASE WHEN unended = 1 THEN NEW.job_id ELSE finisher END
			WHERE id = NEW.wf_id RETURNING unended INTO rest;
			IF rest = 0 THEN
				INSERT INTO {s}.wf_ends (id) VALUES (NEW.wf_id) ON CONFLICT DO NOTHING;
			END IF;
			RETURN NULL;
		END $$`,
		// wf_step_reopen as in workflowRetryMigration: a reopened
		// workflow's end, announced or not, is no longer one.
		`CREATE OR REPLACE FUNCTION {s}.wf_step_reopen() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		BEGIN
			UPDATE {s}.workflows SET unended = unended + 1, bad = greatest(bad - 1, 0),
				run = run + (status <> 'running')::int,
				status = 'running', finished_at = NULL, finisher = NULL, cancelled = false
			WHERE id = NEW.wf_id;
			DELETE FROM {s}.wf_ends WHERE id = NEW.wf_id;
			UPDATE {s}.wf_steps t SET waits = t.waits + 1,
				blocked = CASE WHEN EXISTS (SELECT 1 FROM {s}.wf_edges e2 JOIN {s}.wf_steps d2 ON d2.job_id = e2.dep
					WHERE e2.job = t.job_id AND NOT e2.settled AND d2.state IN ('failed', 'cancelled'))
					THEN t.blocked END
			FROM {s}.wf_edges e WHERE e.dep = NEW.job_id AND t.job_id = e.job AND t.state = 'waiting';
			UPDATE {s}.jobs SET status = 'scheduled', next_retry_at = NULL, completed_at = NULL, last_error = NULL,
				error_type = NULL, error_stack = NULL, attempts = 0, cancel_requested = false
			WHERE status = 'cancelled' AND error_type = 'WorkflowDependency' AND id IN (
				SELECT e.job FROM {s}.wf_edges e JOIN {s}.wf_steps d ON d.job_id = e.job
				WHERE e.dep = NEW.job_id AND d.state = 'cancelled'
					AND NOT EXISTS (SELECT 1 FROM {s}.wf_edges e2 JOIN {s}.wf_steps d2 ON d2.job_id = e2.dep
						WHERE e2.job = d.job_id AND NOT e2.settled AND d2.state IN ('failed', 'cancelled')));
			INSERT INTO {s}.wf_binds (dep, job, param)
				SELECT NEW.job_id, d.job_id, b->>'param'
				FROM {s}.wf_edges e JOIN {s}.wf_steps d ON d.job_id = e.job, jsonb_array_elements(CASE WHEN jsonb_typeof(d.binds) = 'array' THEN d.binds ELSE '[]' END) b
				WHERE e.dep = NEW.job_id AND d.state = 'waiting' AND b->>'from' = NEW.name
				ON CONFLICT DO NOTHING;
			RETURN NULL;
		END $$`,
	},
}

// workflowFill50Migration leaves half of each new page of the step and
// workflow rows free instead of 30% (migration 15). A burst of
// acknowledgements updates each step row once or twice and each workflow
// row once in place before any vacuum or page pruning frees the versions
// it replaced; with 30% free most of a batch's step updates found their
// page full and were written as new tuples entered into both of
// wf_steps' indexes. Measured by EXPLAIN (ANALYZE, WAL) of the
// acknowledgement of 100 steps of two-step workflows (releasing 100
// dependents), then of their 100 dependents (ending the workflows): WAL
// records of the step updates 530–564 → 200–230 and 214–262 → 100, of
// the workflows' counting down 200–256 → 100: every update heap-only.
var workflowFill50Migration = migration{
	version: 19,
	name:    "workflows: half of the step and workflow rows' pages left for their updates",
	stmts: []string{
		`ALTER TABLE {s}.wf_steps SET (fillfactor = 50)`,
		`ALTER TABLE {s}.workflows SET (fillfactor = 50)`,
	},
}
