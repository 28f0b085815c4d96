package sqlitestore

// The workflow triggers without temporary tables per row (schema version
// 20). SQLite runs a trigger's body as a sub-program per row, and every
// OpenEphemeral in it builds and drops a temporary B-tree per row (a
// pager, a page zeroed, a table created): a constant IN list of three or
// more values (its WHEN clauses'), UPDATE … FROM, an IN (SELECT …) and a
// DELETE from a WITHOUT ROWID table with triggers each cost one. Under
// callgrind these temporary tables were most of a step's completion
// (about 430k instructions for a step that releases one dependent and
// 260k for a last step, against 41k for a plain job's).
//
// The same work is now done by three triggers whose WHEN clauses are
// mutually exclusive, so that their firing order never matters:
//   - qm_wf_step_end: a step without dependents (a last step, or one of
//     independent steps) counts itself off its workflow, nothing else;
//   - qm_wf_step_one: a step with exactly one dependent that binds no
//     key finds it by its edge's primary key (min(job) of its dep
//     prefix) and updates it by row id, which needs no temporary table;
//   - qm_wf_step_deps: any other step runs the general statements, as
//     before.
//
// Each runs its statements in the order of the former qm_wf_step_end
// (bound keys, the dependents' waits, the workflow's counters, the
// dependents' release), so what a cascade records (the finisher, a
// blocked reason) is unchanged. The WHEN clauses of qm_wf_end and the
// step triggers compare with OR instead of a three-value IN list.

const (
	// wfStepEnded is the WHEN test of a step row's end.
	wfStepEnded = `OLD.state IN ('waiting', 'ready') AND (NEW.state = 'completed' OR NEW.state = 'failed' OR NEW.state = 'cancelled')`
	// wfHasDeps: the step that ended has a dependent.
	wfHasDeps = `EXISTS (SELECT 1 FROM qm_wf_edges WHERE dep = NEW.job_id)`
	// wfOneDep: the step that ended has exactly one dependent, which
	// binds no key to a result. It reads only what no trigger body
	// changes (edges, a step's bind list), so that the three WHEN
	// clauses stay exclusive whichever trigger runs first.
	wfOneDep = `(SELECT min(job) FROM qm_wf_edges WHERE dep = NEW.job_id) = (SELECT max(job) FROM qm_wf_edges WHERE dep = NEW.job_id)
		AND coalesce((SELECT binds FROM qm_wf_steps WHERE job_id = ` + wfTheDep + `), 'null') IN ('null', '[]')`
	// wfTheDep is that one dependent's job.
	wfTheDep = `(SELECT min(job) FROM qm_wf_edges WHERE dep = NEW.job_id)`

	// wfCountOff counts the step off its workflow (finishing it with its
	// last step).
	wfCountOff = `UPDATE qm_workflows SET unended = unended - 1, bad = bad + (NEW.state != 'completed'),
					status = CASE WHEN unended = 1 THEN
						CASE WHEN cancelled = 1 THEN 'cancelled' WHEN bad + (NEW.state != 'completed') > 0 THEN 'failed' ELSE 'completed' END
						ELSE status END,
					finished_at = CASE WHEN unended = 1 THEN NEW.ended_at ELSE finished_at END,
					finisher = CASE WHEN unended = 1 THEN NEW.job_id ELSE finisher END
				WHERE id = NEW.wf_id`
	// wfBlockedBy is the reason a hard dependent of a step that did not
	// complete is cancelled.
	wfBlockedBy = `'step "' || NEW.name || '" ' || CASE NEW.state WHEN 'failed' THEN 'failed' ELSE 'was cancelled' END
							|| coalesce(': ' || NEW.reason, '')`
)

// wfStepDepsBody are the general statements of a step's end (those of
// workflow_retry.go's qm_wf_step_end).
var wfStepDepsBody = []string{
	`DELETE FROM qm_wf_binds WHERE dep = NEW.job_id`,
	`UPDATE qm_wf_steps SET waits = waits - 1,
					blocked = CASE WHEN blocked IS NULL AND NEW.state != 'completed' AND e.settled = 0
						THEN ` + wfBlockedBy + `
						ELSE blocked END
				FROM qm_wf_edges e WHERE e.dep = NEW.job_id AND qm_wf_steps.job_id = e.job`,
	wfCountOff,
	`UPDATE qm_wf_steps SET state = 'ready'
				WHERE job_id IN (SELECT job FROM qm_wf_edges WHERE dep = NEW.job_id) AND waits = 0 AND state = 'waiting' AND blocked IS NULL`,
	`UPDATE fila SET
					status = CASE WHEN s.blocked IS NOT NULL THEN 'cancelled'
						WHEN s.run_at > ` + wfNow + ` THEN 'scheduled' ELSE 'pending' END,
					next_retry_at = CASE WHEN s.blocked IS NULL AND s.run_at > ` + wfNow + ` THEN s.run_at END,
					completed_at = CASE WHEN s.blocked IS NOT NULL THEN ` + wfNow + ` END,
					last_error = CASE WHEN s.blocked IS NOT NULL THEN s.blocked ELSE last_error END,
					error_type = CASE WHEN s.blocked IS NOT NULL THEN 'WorkflowDependency' ELSE error_type END
				FROM (SELECT d.job_id, d.blocked, d.run_at FROM qm_wf_edges e JOIN qm_wf_steps d ON d.job_id = e.job
					WHERE e.dep = NEW.job_id AND d.waits = 0 AND d.state IN ('waiting', 'ready')) s
				WHERE fila.id = s.job_id AND fila.status = 'scheduled' AND fila.next_retry_at IS NULL`,
}

// wfStepOneBody is wfStepDepsBody for the one dependent (wfTheDep), by
// row id; it binds no key, so there is no bound key to delete.
var wfStepOneBody = []string{
	`UPDATE qm_wf_steps SET waits = waits - 1,
					blocked = CASE WHEN blocked IS NULL AND NEW.state != 'completed'
							AND (SELECT settled FROM qm_wf_edges WHERE dep = NEW.job_id AND job = qm_wf_steps.job_id) = 0
						THEN ` + wfBlockedBy + `
						ELSE blocked END
				WHERE job_id = ` + wfTheDep,
	wfCountOff,
	`UPDATE qm_wf_steps SET state = 'ready'
				WHERE job_id = ` + wfTheDep + ` AND waits = 0 AND state = 'waiting' AND blocked IS NULL`,
	`UPDATE fila SET
					status = CASE WHEN ` + wfDepBlocked + ` IS NOT NULL THEN 'cancelled'
						WHEN ` + wfDepRunAt + ` > ` + wfNow + ` THEN 'scheduled' ELSE 'pending' END,
					next_retry_at = CASE WHEN ` + wfDepBlocked + ` IS NULL AND ` + wfDepRunAt + ` > ` + wfNow + ` THEN ` + wfDepRunAt + ` END,
					completed_at = CASE WHEN ` + wfDepBlocked + ` IS NOT NULL THEN ` + wfNow + ` END,
					last_error = CASE WHEN ` + wfDepBlocked + ` IS NOT NULL THEN ` + wfDepBlocked + ` ELSE last_error END,
					error_type = CASE WHEN ` + wfDepBlocked + ` IS NOT NULL THEN 'WorkflowDependency' ELSE error_type END
				WHERE id = ` + wfTheDep + ` AND status = 'scheduled' AND next_retry_at IS NULL
					AND EXISTS (SELECT 1 FROM qm_wf_steps WHERE job_id = ` + wfTheDep + ` AND waits = 0 AND state IN ('waiting', 'ready'))`,
}

const (
	wfDepBlocked = `(SELECT blocked FROM qm_wf_steps WHERE job_id = ` + wfTheDep + `)`
	wfDepRunAt   = `(SELECT run_at FROM qm_wf_steps WHERE job_id = ` + wfTheDep + `)`
)

func wfTrigger(name, when string, body []string) string {
	s := `CREATE TRIGGER ` + name + ` AFTER UPDATE OF state ON qm_wf_steps
			WHEN ` + wfStepEnded + ` AND ` + when + `
			BEGIN
				`
	for _, b := range body {
		s += b + ";\n\t\t\t\t"
	}
	return s + "END"
}

// workflowTriggersMigration replaces qm_wf_end and qm_wf_step_end.
var workflowTriggersMigration = migration{
	version: 20,
	name:    "workflows: triggers without a temporary table per row",
	stmts: []string{
		`DROP TRIGGER IF EXISTS qm_wf_end`,
		`CREATE TRIGGER qm_wf_end AFTER UPDATE OF status ON fila
			WHEN NEW.wf_id IS NOT NULL AND (NEW.status = 'completed' OR NEW.status = 'failed' OR NEW.status = 'cancelled')
			BEGIN
				UPDATE qm_wf_steps SET state = NEW.status, result = NEW.result,
					ended_at = coalesce(NEW.completed_at, ` + wfNow + `),
					reason = CASE WHEN NEW.status = 'completed' THEN NULL
						ELSE coalesce(reason, NEW.last_error, NEW.status) END
				WHERE job_id = NEW.id AND state IN ('waiting', 'ready');
			END`,
		`DROP TRIGGER IF EXISTS qm_wf_step_end`,
		`DROP TRIGGER IF EXISTS qm_wf_step_one`,
		`DROP TRIGGER IF EXISTS qm_wf_step_deps`,
		wfTrigger("qm_wf_step_end", `NOT `+wfHasDeps, []string{wfCountOff}),
		wfTrigger("qm_wf_step_one", wfHasDeps+` AND `+wfOneDep, wfStepOneBody),
		wfTrigger("qm_wf_step_deps", wfHasDeps+` AND NOT (`+wfOneDep+`)`, wfStepDepsBody),
	},
}
