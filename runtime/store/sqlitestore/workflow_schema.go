package sqlitestore

// Workflows on SQLite. Every step of a workflow is a fila row of one shard
// (fila.wf_id names its workflow), so one transaction can both end a step
// and release the steps that wait for it. The bookkeeping is done by
// triggers: whoever ends a step's row — our Complete, Fail, Cancel,
// orphan recovery, Purge, or queue-max 0.2.0 writing the same file — the
// same statement's transaction records it and releases or cancels the
// dependents. Rows of other jobs pay only the WHEN test of two triggers.
//
// A waiting step is stored with status 'scheduled' and no next_retry_at:
// queue-max pops only 'pending' rows, and our promotion of due scheduled
// rows compares next_retry_at, so the row is never claimed or promoted
// until the release gives it its status (pending, or scheduled at its
// run-at time).
//
// Tables (in every shard file):
//   - qm_workflows: one row per workflow, with its count of steps not
//     ended (unended) and of steps that ended other than completed (bad),
//     and the job whose end finished it (finisher): the process that
//     committed that end emits the workflow's event.
//   - qm_wf_steps: one row per step, keyed by its job's row id, with the
//     number of dependencies that have not ended (waits), the reason it
//     must be cancelled instead of run (blocked), its state (waiting,
//     ready, completed, failed, cancelled) and the result it completed
//     with, kept here so that completed-job retention does not lose it.
//   - qm_wf_edges: (dependency, dependent) pairs, settled = 1 for
//     AfterSettled.
//   - qm_wf_binds: payload keys of a dependent filled from a dependency's
//     result when that dependency completes.
//
// The triggers cascade (a cancelled step cancels its own dependents), so
// our connections run with recursive_triggers on. A connection without it
// (queue-max's) stops a cascade after one step; orphan recovery finishes
// it (sqlWorkflowRepair).

// wfNow is the current time in store.TimeLayout, for the triggers.
const wfNow = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`

// workflowMigration creates the workflow tables and triggers.
var workflowMigration = migration{
	name: "workflows: steps that wait for each other",
	addColumns: [][3]string{
		{"fila", "wf_id", "INTEGER"},
	},
	stmts: []string{
		`CREATE INDEX IF NOT EXISTS idx_qm_wf_jobs ON fila(wf_id) WHERE wf_id IS NOT NULL`,
		`CREATE TABLE IF NOT EXISTS qm_workflows (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			name TEXT NOT NULL,
			status TEXT NOT NULL DEFAULT 'running',
			steps INTEGER NOT NULL,
			unended INTEGER NOT NULL,
			bad INTEGER NOT NULL DEFAULT 0,
			cancelled INTEGER NOT NULL DEFAULT 0,
			created_at TEXT NOT NULL,
			finished_at TEXT,
			finisher INTEGER
		)`,
		`CREATE INDEX IF NOT EXISTS idx_qm_wf_status ON qm_workflows(status, id)`,
		`CREATE INDEX IF NOT EXISTS idx_qm_wf_finished ON qm_workflows(finished_at) WHERE status != 'running'`,
		`CREATE TABLE IF NOT EXISTS qm_wf_steps (
			job_id INTEGER PRIMARY KEY,
			wf_id INTEGER NOT NULL,
			pos INTEGER NOT NULL,
			name TEXT NOT NULL,
			task TEXT,
			deps_after TEXT,
			deps_settled TEXT,
			binds TEXT,
			waits INTEGER NOT NULL,
			blocked TEXT,
			state TEXT NOT NULL,
			run_at TEXT,
			reason TEXT,
			result TEXT,
			ended_at TEXT
		)`,
		`CREATE UNIQUE INDEX IF NOT EXISTS idx_qm_wf_step_name ON qm_wf_steps(wf_id, name)`,
		`CREATE INDEX IF NOT EXISTS idx_qm_wf_open ON qm_wf_steps(job_id) WHERE state IN ('waiting', 'ready')`,
		`CREATE TABLE IF NOT EXISTS qm_wf_edges (
			dep INTEGER NOT NULL,
			job INTEGER NOT NULL,
			settled INTEGER NOT NULL,
			PRIMARY KEY (dep, job)
		) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS qm_wf_binds (
			dep INTEGER NOT NULL,
			job INTEGER NOT NULL,
			param TEXT NOT NULL,
			PRIMARY KEY (dep, job, param)
		) WITHOUT ROWID`,
		// A step's row ended: record it in its step (once, until its job
		// is re-queued: workflow_retry.go).
		`CREATE TRIGGER IF NOT EXISTS qm_wf_end AFTER UPDATE OF status ON fila
			WHEN NEW.wf_id IS NOT NULL AND NEW.status IN ('completed', 'failed', 'cancelled')
			BEGIN
				UPDATE qm_wf_steps SET state = NEW.status, result = NEW.result,
					ended_at = coalesce(NEW.completed_at, ` + wfNow + `),
					reason = CASE WHEN NEW.status = 'completed' THEN NULL
						ELSE coalesce(reason, NEW.last_error, NEW.status) END
				WHERE job_id = NEW.id AND state IN ('waiting', 'ready');
			END`,
		// A step's row deleted: a running one completed without a result
		// (the row is not kept), any other was removed (Purge).
		`CREATE TRIGGER IF NOT EXISTS qm_wf_gone AFTER DELETE ON fila
			WHEN OLD.wf_id IS NOT NULL
			BEGIN
				UPDATE qm_wf_steps SET
					state = CASE WHEN OLD.status IN ('processing', 'completed') THEN 'completed' ELSE 'cancelled' END,
					reason = CASE WHEN OLD.status IN ('processing', 'completed') THEN NULL ELSE 'job deleted' END,
					ended_at = ` + wfNow + `
				WHERE job_id = OLD.id AND state IN ('waiting', 'ready');
			END`,
		// A step ended: fill its dependents' bound keys, count it off
		// their waits (blocking the hard dependents of a step that did not
		// complete), and count it off its workflow.
		`CREATE TRIGGER IF NOT EXISTS qm_wf_step_end AFTER UPDATE OF state ON qm_wf_steps
			WHEN OLD.state IN ('waiting', 'ready') AND NEW.state IN ('completed', 'failed', 'cancelled')
			BEGIN
				DELETE FROM qm_wf_binds WHERE dep = NEW.job_id;
				UPDATE qm_wf_steps SET waits = waits - 1,
					blocked = CASE WHEN blocked IS NULL AND NEW.state != 'completed' AND e.settled = 0
						THEN 'step "' || NEW.name || '" ' || CASE NEW.state WHEN 'failed' THEN 'failed' ELSE 'was cancelled' END
							|| coalesce(': ' || NEW.reason, '')
						ELSE blocked END
				FROM qm_wf_edges e WHERE e.dep = NEW.job_id AND qm_wf_steps.job_id = e.job;
				UPDATE qm_workflows SET unended = unended - 1, bad = bad + (NEW.state != 'completed'),
					status = CASE WHEN unended = 1 THEN
						CASE WHEN cancelled = 1 THEN 'cancelled' WHEN bad + (NEW.state != 'completed') > 0 THEN 'failed' ELSE 'completed' END
						ELSE status END,
					finished_at = CASE WHEN unended = 1 THEN NEW.ended_at ELSE finished_at END,
					finisher = CASE WHEN unended = 1 THEN NEW.job_id ELSE finisher END
				WHERE id = NEW.wf_id;
			END`,
		// A bound key's dependency completed: write its result into the
		// waiting dependent's payload (JSON null if it returned none).
		`CREATE TRIGGER IF NOT EXISTS qm_wf_bind AFTER DELETE ON qm_wf_binds
			BEGIN
				UPDATE fila SET payload = json_set(payload, '$."' || OLD.param || '"',
					json(coalesce((SELECT result FROM qm_wf_steps WHERE job_id = OLD.dep), 'null')))
				WHERE id = OLD.job AND status = 'scheduled' AND next_retry_at IS NULL
					AND EXISTS (SELECT 1 FROM qm_wf_steps WHERE job_id = OLD.dep AND state = 'completed');
			END`,
		// A waiting step's last dependency ended: release its row (ready
		// now, or at its run-at time), or cancel it when a dependency it
		// needed did not complete.
		`CREATE TRIGGER IF NOT EXISTS qm_wf_release AFTER UPDATE OF waits ON qm_wf_steps
			WHEN NEW.waits = 0 AND OLD.waits > 0 AND NEW.state = 'waiting'
			BEGIN
				UPDATE qm_wf_steps SET state = 'ready' WHERE job_id = NEW.job_id AND NEW.blocked IS NULL;
				UPDATE fila SET
					status = CASE WHEN NEW.blocked IS NOT NULL THEN 'cancelled'
						WHEN NEW.run_at > ` + wfNow + ` THEN 'scheduled' ELSE 'pending' END,
					next_retry_at = CASE WHEN NEW.blocked IS NULL AND NEW.run_at > ` + wfNow + ` THEN NEW.run_at END,
					completed_at = CASE WHEN NEW.blocked IS NOT NULL THEN ` + wfNow + ` END,
					last_error = CASE WHEN NEW.blocked IS NOT NULL THEN NEW.blocked ELSE last_error END,
					error_type = CASE WHEN NEW.blocked IS NOT NULL THEN 'WorkflowDependency' ELSE error_type END
				WHERE id = NEW.job_id AND status = 'scheduled' AND next_retry_at IS NULL;
			END`,
	},
}

// sqlWorkflowRepair re-applies the end of steps whose row ended on a
// connection without recursive triggers (queue-max's) while the step
// still counts as not ended; the triggers then finish the cascade.
const sqlWorkflowRepair = `UPDATE fila SET status = status WHERE id IN (
	SELECT s.job_id FROM qm_wf_steps s JOIN fila f ON f.id = s.job_id
	WHERE s.state IN ('waiting', 'ready') AND f.status IN ('completed', 'failed', 'cancelled'))`
