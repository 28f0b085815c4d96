package pgstore

// Workflows on PostgreSQL: the design of the SQLite store (see
// sqlitestore/workflow_schema.go). Every step is a jobs row with wf_id
// set; a waiting step is stored 'scheduled' with no next_retry_at, which
// no claim or promotion selects. Triggers record a step's end, fill the
// bound keys of its dependents, count it off their waits and release (or
// cancel) the ones it was the last dependency of, all in the transaction
// that ended it, whoever wrote it. Other jobs pay only the WHEN test of
// two row triggers.
//
// The trigger functions only look rows up by key, but PL/pgSQL plans their
// statements once, often while the step tables are nearly empty (no
// statistics yet), when a sequential scan looks cheapest; they run with
// enable_seqscan off so that the plans stay on the primary keys as the
// tables grow.
var workflowMigration = migration{
	name: "workflows: steps that wait for each other",
	stmts: []string{
		`ALTER TABLE {s}.jobs ADD COLUMN IF NOT EXISTS wf_id bigint`,
		`CREATE INDEX IF NOT EXISTS jobs_wf ON {s}.jobs (wf_id) WHERE wf_id IS NOT NULL`,
		`CREATE TABLE IF NOT EXISTS {s}.workflows (
			id bigserial PRIMARY KEY,
			shard integer NOT NULL,
			name text NOT NULL,
			status text NOT NULL DEFAULT 'running',
			steps integer NOT NULL,
			unended integer NOT NULL,
			bad integer NOT NULL DEFAULT 0,
			cancelled boolean NOT NULL DEFAULT false,
			created_at timestamptz NOT NULL,
			finished_at timestamptz,
			finisher bigint
		)`,
		`CREATE INDEX IF NOT EXISTS workflows_status ON {s}.workflows (status, id)`,
		`CREATE INDEX IF NOT EXISTS workflows_finished ON {s}.workflows (finished_at) WHERE status <> 'running'`,
		`CREATE TABLE IF NOT EXISTS {s}.wf_steps (
			job_id bigint PRIMARY KEY,
			wf_id bigint NOT NULL,
			pos integer NOT NULL,
			name text NOT NULL,
			task text,
			deps_after jsonb,
			deps_settled jsonb,
			binds jsonb,
			waits integer NOT NULL,
			blocked text,
			state text NOT NULL,
			run_at timestamptz,
			reason text,
			result json,
			ended_at timestamptz,
			UNIQUE (wf_id, name)
		)`,
		`CREATE TABLE IF NOT EXISTS {s}.wf_edges (
			dep bigint NOT NULL,
			job bigint NOT NULL,
			settled boolean NOT NULL,
			PRIMARY KEY (dep, job)
		)`,
		`CREATE TABLE IF NOT EXISTS {s}.wf_binds (
			dep bigint NOT NULL,
			job bigint NOT NULL,
			param text NOT NULL,
			PRIMARY KEY (dep, job, param)
		)`,
		// A step's row ended (once: a step that ended stays ended).
		`CREATE OR REPLACE FUNCTION {s}.wf_job_end() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		BEGIN
			UPDATE {s}.wf_steps SET state = NEW.status, result = NEW.result,
				ended_at = coalesce(NEW.completed_at, now()),
				reason = CASE WHEN NEW.status = 'completed' THEN NULL ELSE coalesce(reason, NEW.last_error, NEW.status) END
			WHERE job_id = NEW.id AND state IN ('waiting', 'ready');
			RETURN NULL;
		END $$`,
		`CREATE OR REPLACE TRIGGER jobs_wf_end AFTER UPDATE OF status ON {s}.jobs
			FOR EACH ROW WHEN (NEW.wf_id IS NOT NULL AND NEW.status IN ('completed', 'failed', 'cancelled'))
			EXECUTE FUNCTION {s}.wf_job_end()`,
		// A step's row deleted: a running one completed without a kept
		// row, any other was removed (Purge).
		`CREATE OR REPLACE FUNCTION {s}.wf_job_gone() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		BEGIN
			UPDATE {s}.wf_steps SET
				state = CASE WHEN OLD.status IN ('processing', 'completed') THEN 'completed' ELSE 'cancelled' END,
				reason = CASE WHEN OLD.status IN ('processing', 'completed') THEN NULL ELSE 'job deleted' END,
				ended_at = now()
			WHERE job_id = OLD.id AND state IN ('waiting', 'ready');
			RETURN NULL;
		END $$`,
		`CREATE OR REPLACE TRIGGER jobs_wf_gone AFTER DELETE ON {s}.jobs
			FOR EACH ROW WHEN (OLD.wf_id IS NOT NULL) EXECUTE FUNCTION {s}.wf_job_gone()`,
		// A step ended: bound keys, dependents' waits, the workflow.
		`CREATE OR REPLACE FUNCTION {s}.wf_step_end() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		DECLARE b record;
		BEGIN
			IF NEW.state = 'completed' THEN
				FOR b IN SELECT job, param FROM {s}.wf_binds WHERE dep = NEW.job_id LOOP
					UPDATE {s}.jobs SET payload = (payload::jsonb || jsonb_build_object(b.param, coalesce(NEW.result::jsonb, 'null'::jsonb)))::json
					WHERE id = b.job AND status = 'scheduled' AND next_retry_at IS NULL;
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
			WHERE id = NEW.wf_id;
			RETURN NULL;
		END $$`,
		`CREATE OR REPLACE TRIGGER wf_steps_end AFTER UPDATE OF state ON {s}.wf_steps
			FOR EACH ROW WHEN (OLD.state IN ('waiting', 'ready') AND NEW.state IN ('completed', 'failed', 'cancelled'))
			EXECUTE FUNCTION {s}.wf_step_end()`,
		// A waiting step's last dependency ended: release or cancel it.
		`CREATE OR REPLACE FUNCTION {s}.wf_release() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		BEGIN
			IF NEW.blocked IS NULL THEN
				UPDATE {s}.wf_steps SET state = 'ready' WHERE job_id = NEW.job_id;
				UPDATE {s}.jobs SET status = CASE WHEN NEW.run_at > now() THEN 'scheduled' ELSE 'pending' END,
					next_retry_at = CASE WHEN NEW.run_at > now() THEN NEW.run_at END
				WHERE id = NEW.job_id AND status = 'scheduled' AND next_retry_at IS NULL;
			ELSE
				UPDATE {s}.jobs SET status = 'cancelled', completed_at = now(), last_error = NEW.blocked,
					error_type = 'WorkflowDependency'
				WHERE id = NEW.job_id AND status = 'scheduled' AND next_retry_at IS NULL;
			END IF;
			RETURN NULL;
		END $$`,
		// FinishedBy's look-up, by key whatever the statistics say.
		`CREATE OR REPLACE FUNCTION {s}.wf_finished_by(jobs bigint[])
			RETURNS TABLE (id bigint, shard integer, name text, status text, created_at timestamptz, finished_at timestamptz)
			LANGUAGE sql STABLE SET enable_seqscan = off AS $$
			SELECT w.id, w.shard, w.name, w.status, w.created_at, w.finished_at
			FROM unnest(jobs) AS j(id) JOIN {s}.wf_steps st ON st.job_id = j.id
			JOIN {s}.workflows w ON w.id = st.wf_id AND w.finisher = j.id
		$$`,
		`CREATE OR REPLACE TRIGGER wf_steps_release AFTER UPDATE OF waits ON {s}.wf_steps
			FOR EACH ROW WHEN (NEW.waits = 0 AND OLD.waits > 0 AND NEW.state = 'waiting')
			EXECUTE FUNCTION {s}.wf_release()`,
	},
}

// workflowReleaseByKey replaces the trigger functions that write a
// dependent's job row, and gives FinishedBy an index:
//   - the functions' condition on that row, "status = 'scheduled' AND
//     next_retry_at IS NULL", matched the partial index jobs_due
//     (scheduled rows by next_retry_at), and with enable_seqscan off the
//     planner took it over the primary key: every release read every
//     waiting step's entry (5,000 waiting steps: ~0.3 ms per release).
//     The condition is now one boolean test that no index matches, so
//     the row is found by its id;
//   - FinishedBy reads the workflows by their finisher through an index
//     (a job id names one job, so one workflow) instead of calling
//     wf_finished_by, a SQL function planned again at every call.
var workflowReleaseByKey = migration{
	name: "workflows: releases find the dependent's job by its key; workflows by finisher",
	stmts: []string{
		`CREATE INDEX IF NOT EXISTS workflows_finisher ON {s}.workflows (finisher) WHERE finisher IS NOT NULL`,
		`DROP FUNCTION IF EXISTS {s}.wf_finished_by(bigint[])`,
		`CREATE OR REPLACE FUNCTION {s}.wf_step_end() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		DECLARE b record;
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
			WHERE id = NEW.wf_id;
			RETURN NULL;
		END $$`,
		`CREATE OR REPLACE FUNCTION {s}.wf_release() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		BEGIN
			IF NEW.blocked IS NULL THEN
				UPDATE {s}.wf_steps SET state = 'ready' WHERE job_id = NEW.job_id;
				UPDATE {s}.jobs SET status = CASE WHEN NEW.run_at > now() THEN 'scheduled' ELSE 'pending' END,
					next_retry_at = CASE WHEN NEW.run_at > now() THEN NEW.run_at END
				WHERE id = NEW.job_id AND ` + wfWaitingJob + `;
			ELSE
				UPDATE {s}.jobs SET status = 'cancelled', completed_at = now(), last_error = NEW.blocked,
					error_type = 'WorkflowDependency'
				WHERE id = NEW.job_id AND ` + wfWaitingJob + `;
			END IF;
			RETURN NULL;
		END $$`,
	},
}

// wfWaitingJob is true for a waiting step's job row, in a form that no
// index matches (see workflowReleaseByKey).
const wfWaitingJob = `(status = 'scheduled' AND next_retry_at IS NULL) IS TRUE`
