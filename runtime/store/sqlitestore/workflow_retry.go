package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Retrying workflows and announcing their ends (see store/workflow_retry.go).
//
// Reopening is done by two triggers, so that every statement that puts a
// step's job back (RetryJob, RetryFailed, RequeueDead, RetryWorkflow)
// reopens its step and its branch in its own transaction:
//   - qm_wf_reopen_job: a step's row went from failed or cancelled back to
//     pending or scheduled. Its step row becomes ready (or waiting, for a
//     row in the waiting shape: scheduled without a time), with its waits
//     counted again from the dependencies not ended.
//   - qm_wf_reopen: a step became open again. Its workflow runs again
//     (a new run, whose end is announced anew); its waiting dependents
//     wait for it again; its dependents that its end cancelled without
//     running, and whose other hard dependencies did not fail, go back to
//     the waiting shape (which fires the first trigger for them, and so on
//     down the branch); and their keys bound to its result are armed again.
//
// qm_workflows.announced is 0 until a process claims the workflow's end
// (ClaimWorkflowEnds); rows that ended before this migration count as
// announced.
var workflowRetryMigration = migration{
	name: "workflows: retry reopens steps and their branch; ends announced once",
	addColumns: [][3]string{
		{"qm_workflows", "announced", "INTEGER NOT NULL DEFAULT 0"},
		{"qm_workflows", "run", "INTEGER NOT NULL DEFAULT 1"},
	},
	stmts: []string{
		// The release moves from a trigger on each dependent's waits into
		// the step's end, after its decrement: SQLite's UPDATE … FROM reads
		// its rows before the triggers of its earlier rows run, so a
		// release that cascaded (a cancelled dependent ending another
		// dependent of the same step) had its decrement overwritten, and
		// a fan-in step after both stayed waiting for ever.
		`DROP TRIGGER IF EXISTS qm_wf_release`,
		`DROP TRIGGER IF EXISTS qm_wf_step_end`,
		`CREATE TRIGGER qm_wf_step_end AFTER UPDATE OF state ON qm_wf_steps
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
				UPDATE qm_wf_steps SET state = 'ready'
				WHERE job_id IN (SELECT job FROM qm_wf_edges WHERE dep = NEW.job_id) AND waits = 0 AND state = 'waiting' AND blocked IS NULL;
				UPDATE fila SET
					status = CASE WHEN s.blocked IS NOT NULL THEN 'cancelled'
						WHEN s.run_at > ` + wfNow + ` THEN 'scheduled' ELSE 'pending' END,
					next_retry_at = CASE WHEN s.blocked IS NULL AND s.run_at > ` + wfNow + ` THEN s.run_at END,
					completed_at = CASE WHEN s.blocked IS NOT NULL THEN ` + wfNow + ` END,
					last_error = CASE WHEN s.blocked IS NOT NULL THEN s.blocked ELSE last_error END,
					error_type = CASE WHEN s.blocked IS NOT NULL THEN 'WorkflowDependency' ELSE error_type END
				FROM (SELECT d.job_id, d.blocked, d.run_at FROM qm_wf_edges e JOIN qm_wf_steps d ON d.job_id = e.job
					WHERE e.dep = NEW.job_id AND d.waits = 0 AND d.state IN ('waiting', 'ready')) s
				WHERE fila.id = s.job_id AND fila.status = 'scheduled' AND fila.next_retry_at IS NULL;
			END`,
		`UPDATE qm_workflows SET announced = 1 WHERE status != 'running'`,
		`CREATE INDEX IF NOT EXISTS idx_qm_wf_unannounced ON qm_workflows(id) WHERE announced = 0 AND status != 'running'`,
		`CREATE TRIGGER IF NOT EXISTS qm_wf_reopen_job AFTER UPDATE OF status ON fila
			WHEN NEW.wf_id IS NOT NULL AND OLD.status IN ('failed', 'cancelled') AND NEW.status IN ('pending', 'scheduled')
			BEGIN
				UPDATE qm_wf_steps SET
					state = CASE WHEN NEW.status = 'scheduled' AND NEW.next_retry_at IS NULL THEN 'waiting' ELSE 'ready' END,
					waits = (SELECT count(*) FROM qm_wf_edges e JOIN qm_wf_steps d ON d.job_id = e.dep
						WHERE e.job = NEW.id AND d.state IN ('waiting', 'ready')),
					blocked = NULL, reason = NULL, result = NULL, ended_at = NULL
				WHERE job_id = NEW.id AND state IN ('failed', 'cancelled');
				-- A row put back in the waiting shape whose dependencies all
				-- ended meanwhile (repairReopens) is released at once.
				UPDATE qm_wf_steps SET state = 'ready' WHERE job_id = NEW.id AND state = 'waiting' AND waits = 0;
				UPDATE fila SET status = CASE WHEN s.run_at > ` + wfNow + ` THEN 'scheduled' ELSE 'pending' END,
					next_retry_at = CASE WHEN s.run_at > ` + wfNow + ` THEN s.run_at END
				FROM (SELECT run_at FROM qm_wf_steps WHERE job_id = NEW.id AND state = 'ready' AND waits = 0) s
				WHERE fila.id = NEW.id AND fila.status = 'scheduled' AND fila.next_retry_at IS NULL;
			END`,
		`CREATE TRIGGER IF NOT EXISTS qm_wf_reopen AFTER UPDATE OF state ON qm_wf_steps
			WHEN OLD.state IN ('failed', 'cancelled') AND NEW.state IN ('waiting', 'ready')
			BEGIN
				UPDATE qm_workflows SET unended = unended + 1, bad = max(bad - 1, 0),
					run = run + (status != 'running'),
					announced = CASE WHEN status != 'running' THEN 0 ELSE announced END,
					status = 'running', finished_at = NULL, finisher = NULL, cancelled = 0
				WHERE id = NEW.wf_id;
				UPDATE qm_wf_steps SET waits = waits + 1,
					blocked = CASE WHEN EXISTS (SELECT 1 FROM qm_wf_edges e2 JOIN qm_wf_steps d2 ON d2.job_id = e2.dep
						WHERE e2.job = qm_wf_steps.job_id AND e2.settled = 0 AND d2.state IN ('failed', 'cancelled'))
						THEN blocked END
				WHERE state = 'waiting' AND job_id IN (SELECT job FROM qm_wf_edges WHERE dep = NEW.job_id);
				UPDATE fila SET status = 'scheduled', next_retry_at = NULL, completed_at = NULL, last_error = NULL,
					error_type = NULL, error_stack = NULL, tentativas = 0, cancel_requested = 0
				WHERE status = 'cancelled' AND error_type = 'WorkflowDependency' AND id IN (
					SELECT e.job FROM qm_wf_edges e JOIN qm_wf_steps d ON d.job_id = e.job
					WHERE e.dep = NEW.job_id AND d.state = 'cancelled'
						AND NOT EXISTS (SELECT 1 FROM qm_wf_edges e2 JOIN qm_wf_steps d2 ON d2.job_id = e2.dep
							WHERE e2.job = d.job_id AND e2.settled = 0 AND d2.state IN ('failed', 'cancelled')));
				INSERT OR IGNORE INTO qm_wf_binds (dep, job, param)
					SELECT NEW.job_id, d.job_id, b.value ->> 'param'
					FROM qm_wf_edges e JOIN qm_wf_steps d ON d.job_id = e.job, json_each(d.binds) b
					WHERE e.dep = NEW.job_id AND d.state = 'waiting' AND b.value ->> 'from' = NEW.name;
			END`,
	},
}

// sqlReopenRoot puts a step's ended job back: waiting (scheduled without a
// time) when a step it depends on is open again, else pending (or
// scheduled at its run-at time). ?1 is the job, ?2 now.
const sqlReopenRoot = `UPDATE fila SET
		status = CASE WHEN w.open THEN 'scheduled' WHEN w.run_at > ?2 THEN 'scheduled' ELSE 'pending' END,
		next_retry_at = CASE WHEN w.open THEN NULL WHEN w.run_at > ?2 THEN w.run_at ELSE ?2 END,
		` + sqlFreshRun + `, cancel_requested = 0
	FROM (SELECT EXISTS (SELECT 1 FROM qm_wf_edges e JOIN qm_wf_steps d ON d.job_id = e.dep
			WHERE e.job = ?1 AND d.state IN ('waiting', 'ready')) AS open,
		(SELECT run_at FROM qm_wf_steps WHERE job_id = ?1) AS run_at) w
	WHERE fila.id = ?1 AND fila.status IN ('failed', 'cancelled')`

// RetryWorkflow reopens a failed or cancelled workflow; see
// store.WorkflowStore.
func (s *Store) RetryWorkflow(ctx context.Context, id int64, now time.Time) (int, error) {
	sh, err := s.workflowShard(id)
	if err != nil {
		return 0, err
	}
	seq := store.JobID(id).Seq()
	ts := store.FormatTime(now)
	var reopened int
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		reopened = 0
		var status string
		var bad int
		err := tx.QueryRowContext(ctx, `SELECT status, bad FROM qm_workflows WHERE id = ?`, seq).Scan(&status, &bad)
		if errors.Is(err, sql.ErrNoRows) {
			return asItem(store.ErrWorkflowNotFound)
		}
		if err != nil {
			return err
		}
		if status == store.WorkflowRunning || status == store.WorkflowCompleted {
			return asItem(fmt.Errorf("%w: workflow %d is %s", store.ErrWorkflowNotRetryable, id, status))
		}
		steps, err := loadRetrySteps(ctx, tx, seq)
		if err != nil {
			return err
		}
		if err := store.CheckRetrySteps(id, steps); err != nil {
			return asItem(err)
		}
		// Roots first, dependencies before dependents, then whatever
		// the cascade did not reach.
		for _, roots := range [2]bool{true, false} {
			for _, st := range store.RetryOrder(steps, roots) {
				if _, err := tx.ExecContext(ctx, sqlReopenRoot, st.Job, ts); err != nil {
					return err
				}
				if st.Failed {
					if _, err := tx.ExecContext(ctx, `DELETE FROM dead_letter_queue WHERE original_job_id = ?`, st.Job); err != nil {
						return err
					}
				}
			}
			if steps, err = loadRetrySteps(ctx, tx, seq); err != nil {
				return err
			}
		}
		for _, st := range steps {
			if !st.Ended() {
				reopened++
			}
		}
		return nil
	})
	var ie itemError
	if errors.As(err, &ie) {
		return 0, ie.err
	}
	return reopened, err
}

// loadRetrySteps reads a workflow's steps with their dependencies and the
// state of their jobs.
func loadRetrySteps(ctx context.Context, tx *sql.Tx, wf int64) ([]store.RetryStep, error) {
	rows, err := tx.QueryContext(ctx, `SELECT s.job_id, s.name, s.state, f.id IS NOT NULL, coalesce(f.status, ''),
			coalesce(f.error_type, ''), coalesce((SELECT json_group_array(e.dep) FROM qm_wf_edges e WHERE e.job = s.job_id), '[]')
		FROM qm_wf_steps s LEFT JOIN fila f ON f.id = s.job_id WHERE s.wf_id = ? ORDER BY s.pos`, wf)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.RetryStep
	for rows.Next() {
		var st store.RetryStep
		var deps string
		if err := rows.Scan(&st.Job, &st.Name, &st.State, &st.HasJob, &st.JobStatus, &st.ErrorType, &deps); err != nil {
			return nil, err
		}
		st.Deps = parseIDs(deps)
		st.Failed = st.JobStatus == string(store.StatusFailed)
		out = append(out, st)
	}
	return out, rows.Err()
}

// parseIDs reads a JSON array of integers.
func parseIDs(s string) []int64 {
	s = strings.Trim(s, "[]")
	if s == "" {
		return nil
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		var v int64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &v); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// ClaimWorkflowEnds claims unannounced workflow ends; see
// store.WorkflowStore. It reads first, on the readers, and writes only
// when there is something to claim.
func (s *Store) ClaimWorkflowEnds(ctx context.Context, p store.ClaimEndsParams) ([]*store.WorkflowRecord, error) {
	list, err := s.shardList(store.AllShards)
	if err != nil {
		return nil, err
	}
	var byShard map[int][]int64
	if p.IDs != nil {
		byShard = map[int][]int64{}
		for _, id := range p.IDs {
			j := store.JobID(id)
			if id > 0 && j.Shard() < len(list) {
				byShard[j.Shard()] = append(byShard[j.Shard()], j.Seq())
			}
		}
	}
	limit := p.MaxRows()
	var out []*store.WorkflowRecord
	for _, sh := range list {
		var seqs []int64
		if byShard != nil {
			if seqs = byShard[sh.idx]; len(seqs) == 0 {
				continue
			}
		} else {
			if len(out) >= limit {
				break
			}
			if seqs, err = unannounced(ctx, sh, limit-len(out)); err != nil {
				return out, err
			}
			if len(seqs) == 0 {
				continue
			}
		}
		if sh.w == nil {
			return out, store.ErrReadOnly
		}
		list := idList(len(seqs), func(k int) int64 { return seqs[k] })
		var got []*store.WorkflowRecord
		err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
			got = got[:0]
			rows, err := tx.QueryContext(ctx, `UPDATE qm_workflows SET announced = 1
				WHERE id IN (SELECT value FROM json_each(?1)) AND announced = 0 AND status != 'running'
				RETURNING `+wfColumns, list)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				w, err := scanWorkflow(rows, sh.idx)
				if err != nil {
					return err
				}
				got = append(got, w)
			}
			return rows.Err()
		})
		if err != nil && !isNoTable(err) {
			return out, fmt.Errorf("shard %d: claim workflow ends: %w", sh.idx, err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// unannounced returns up to n unannounced ended workflows of sh.
func unannounced(ctx context.Context, sh *shardDB, n int) ([]int64, error) {
	rows, err := sh.rquery(ctx, `SELECT id FROM qm_workflows WHERE announced = 0 AND status != 'running' ORDER BY id LIMIT ?`, n)
	if isNoTable(err) || (err != nil && strings.Contains(err.Error(), "no such column")) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shard %d: workflow ends: %w", sh.idx, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// repairReopens finishes reopenings that a connection without recursive
// triggers (queue-max re-queueing a failed step) stopped after one step:
// a dependent's job went back to the waiting shape but its step row still
// says cancelled. Moving such a row out of the waiting shape and back on
// our connection reopens it, with the rest of its branch. It runs in
// RecoverOrphans' transaction, after sqlWorkflowRepair.
func repairReopens(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT s.job_id FROM qm_wf_steps s JOIN fila f ON f.id = s.job_id
		WHERE s.state IN ('failed', 'cancelled') AND f.status = 'scheduled' AND f.next_retry_at IS NULL`)
	if isNoTable(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return err
	}
	list := idList(len(ids), func(k int) int64 { return ids[k] })
	for _, q := range []string{
		`UPDATE fila SET status = 'cancelled' WHERE id IN (SELECT value FROM json_each(?1))`,
		`UPDATE fila SET status = 'scheduled' WHERE id IN (SELECT value FROM json_each(?1))`,
	} {
		if _, err := tx.ExecContext(ctx, q, list); err != nil {
			return err
		}
	}
	return nil
}
