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
