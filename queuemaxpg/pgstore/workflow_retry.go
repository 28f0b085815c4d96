package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/runtime/store"
)

// Retrying workflows and announcing their ends: the design of the SQLite
// store (sqlitestore/workflow_retry.go), with the same two triggers.
// PostgreSQL fires a row trigger at the end of the statement that caused
// it, nested statements included, so the cascade down a branch runs in
// the statement that put the first step back.
var workflowRetryMigration = migration{
	name: "workflows: retry reopens steps and their branch; ends announced once",
	stmts: []string{
		`ALTER TABLE {s}.workflows ADD COLUMN IF NOT EXISTS announced boolean NOT NULL DEFAULT false`,
		`ALTER TABLE {s}.workflows ADD COLUMN IF NOT EXISTS run integer NOT NULL DEFAULT 1`,
		`UPDATE {s}.workflows SET announced = true WHERE status <> 'running'`,
		`CREATE INDEX IF NOT EXISTS workflows_unannounced ON {s}.workflows (id) WHERE NOT announced AND status <> 'running'`,
		`CREATE OR REPLACE FUNCTION {s}.wf_job_reopen() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		BEGIN
			UPDATE {s}.wf_steps SET
				state = CASE WHEN NEW.status = 'scheduled' AND NEW.next_retry_at IS NULL THEN 'waiting' ELSE 'ready' END,
				waits = (SELECT count(*) FROM {s}.wf_edges e JOIN {s}.wf_steps d ON d.job_id = e.dep
					WHERE e.job = NEW.id AND d.state IN ('waiting', 'ready')),
				blocked = NULL, reason = NULL, result = NULL, ended_at = NULL
			WHERE job_id = NEW.id AND state IN ('failed', 'cancelled');
			-- A row put back in the waiting shape whose dependencies all
			-- ended meanwhile is released at once.
			UPDATE {s}.wf_steps SET state = 'ready' WHERE job_id = NEW.id AND state = 'waiting' AND waits = 0;
			UPDATE {s}.jobs j SET status = CASE WHEN s.run_at > now() THEN 'scheduled' ELSE 'pending' END,
				next_retry_at = CASE WHEN s.run_at > now() THEN s.run_at END
			FROM {s}.wf_steps s WHERE s.job_id = NEW.id AND s.state = 'ready' AND s.waits = 0
				AND j.id = NEW.id AND (j.status = 'scheduled' AND j.next_retry_at IS NULL) IS TRUE;
			RETURN NULL;
		END $$`,
		`CREATE OR REPLACE TRIGGER jobs_wf_reopen AFTER UPDATE OF status ON {s}.jobs
			FOR EACH ROW WHEN (NEW.wf_id IS NOT NULL AND OLD.status IN ('failed', 'cancelled') AND NEW.status IN ('pending', 'scheduled'))
			EXECUTE FUNCTION {s}.wf_job_reopen()`,
		`CREATE OR REPLACE FUNCTION {s}.wf_step_reopen() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
		BEGIN
			UPDATE {s}.workflows SET unended = unended + 1, bad = greatest(bad - 1, 0),
				run = run + (status <> 'running')::int,
				announced = CASE WHEN status <> 'running' THEN false ELSE announced END,
				status = 'running', finished_at = NULL, finisher = NULL, cancelled = false
			WHERE id = NEW.wf_id;
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
		`CREATE OR REPLACE TRIGGER wf_steps_reopen AFTER UPDATE OF state ON {s}.wf_steps
			FOR EACH ROW WHEN (OLD.state IN ('failed', 'cancelled') AND NEW.state IN ('waiting', 'ready'))
			EXECUTE FUNCTION {s}.wf_step_reopen()`,
	},
}

// RetryWorkflow reopens a failed or cancelled workflow; see
// store.WorkflowStore.
func (s *Store) RetryWorkflow(ctx context.Context, id int64, now time.Time) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	seq, shard, err := s.wfKey(id)
	if err != nil {
		return 0, err
	}
	var reopened int
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		reopened = 0
		var status string
		err := tx.QueryRow(ctx, s.sql(`SELECT status FROM {s}.workflows WHERE id = $1 AND shard = $2 FOR UPDATE`), seq, shard).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrWorkflowNotFound
		}
		if err != nil {
			return err
		}
		if status == store.WorkflowRunning || status == store.WorkflowCompleted {
			return fmt.Errorf("%w: workflow %d is %s", store.ErrWorkflowNotRetryable, id, status)
		}
		steps, err := s.loadRetrySteps(ctx, tx, seq)
		if err != nil {
			return err
		}
		if err := store.CheckRetrySteps(id, steps); err != nil {
			return err
		}
		// Roots first, dependencies before dependents, then whatever
		// the cascade did not reach.
		for _, roots := range [2]bool{true, false} {
			for _, st := range store.RetryOrder(steps, roots) {
				if _, err := tx.Exec(ctx, s.x(`WITH w AS (SELECT EXISTS (SELECT 1 FROM {s}.wf_edges e JOIN {s}.wf_steps d ON d.job_id = e.dep
						WHERE e.job = $2 AND d.state IN ('waiting', 'ready')) AS open,
						(SELECT run_at FROM {s}.wf_steps WHERE job_id = $2) AS run_at),
					r AS (UPDATE {s}.jobs SET
						status = CASE WHEN w.open OR w.run_at > @now THEN 'scheduled' ELSE 'pending' END,
						next_retry_at = CASE WHEN w.open THEN NULL WHEN w.run_at > @now THEN w.run_at ELSE @now END,
						attempts = 0, worker_id = NULL, heartbeat = NULL, lease = NULL, last_error = NULL, error_type = NULL,
						error_stack = NULL, completed_at = NULL, cancel_requested = false
						FROM w WHERE id = $2 AND status IN ('failed', 'cancelled') RETURNING id)
					DELETE FROM {s}.dead_letters WHERE original_job_id IN (SELECT id FROM r)`), now, st.Job); err != nil {
					return err
				}
			}
			if steps, err = s.loadRetrySteps(ctx, tx, seq); err != nil {
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
	if err != nil {
		return 0, err
	}
	s.wake(ctx)
	return reopened, nil
}

// loadRetrySteps reads a workflow's steps with their dependencies and the
// state of their jobs.
func (s *Store) loadRetrySteps(ctx context.Context, tx pgx.Tx, wf int64) ([]store.RetryStep, error) {
	rows, err := tx.Query(ctx, s.sql(`SELECT st.job_id, st.name, st.state, j.id IS NOT NULL, coalesce(j.status, ''),
			coalesce(j.error_type, ''), coalesce((SELECT array_agg(e.dep) FROM {s}.wf_edges e WHERE e.job = st.job_id), '{}')
		FROM {s}.wf_steps st LEFT JOIN {s}.jobs j ON j.id = st.job_id WHERE st.wf_id = $1 ORDER BY st.pos`), wf)
	if err != nil {
		return nil, err
	}
	var out []store.RetryStep
	var st store.RetryStep
	_, err = pgx.ForEachRow(rows, []any{&st.Job, &st.Name, &st.State, &st.HasJob, &st.JobStatus, &st.ErrorType, &st.Deps}, func() error {
		st.Failed = st.JobStatus == string(store.StatusFailed)
		out = append(out, st)
		st = store.RetryStep{}
		return nil
	})
	return out, err
}

// ClaimWorkflowEnds claims unannounced workflow ends; see
// store.WorkflowStore.
func (s *Store) ClaimWorkflowEnds(ctx context.Context, p store.ClaimEndsParams) ([]*store.WorkflowRecord, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	var rows pgx.Rows
	var err error
	if p.IDs != nil {
		seqs := make([]int64, 0, len(p.IDs))
		for _, id := range p.IDs {
			seqs = append(seqs, store.JobID(id).Seq())
		}
		rows, err = s.query(ctx, `WITH e AS (DELETE FROM {s}.wf_ends WHERE id = ANY($1::bigint[]) RETURNING id)
			SELECT `+wfColumnsOf+` FROM e JOIN {s}.workflows w ON w.id = e.id ORDER BY w.id`, seqs)
	} else {
		rows, err = s.query(ctx, `WITH e AS (DELETE FROM {s}.wf_ends WHERE id IN (
				SELECT id FROM {s}.wf_ends ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING id)
			SELECT `+wfColumnsOf+` FROM e JOIN {s}.workflows w ON w.id = e.id ORDER BY w.id`, p.MaxRows())
	}
	if err != nil {
		return nil, fmt.Errorf("queuemax: claim workflow ends: %w", err)
	}
	return scanWorkflows(rows)
}
