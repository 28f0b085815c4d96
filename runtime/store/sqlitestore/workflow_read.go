package sqlitestore

// Reading, cancelling and following workflows: listings, a step's
// stored result and the workflows a batch of acknowledgements finished.

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

const wfColumns = `id, name, status, created_at, finished_at`

func scanWorkflow(r scanner, shard int) (*store.WorkflowRecord, error) {
	var (
		id               int64
		name, status, at string
		fin              sql.NullString
	)
	if err := r.Scan(&id, &name, &status, &at, &fin); err != nil {
		return nil, err
	}
	return &store.WorkflowRecord{ID: int64(store.NewJobID(shard, id)), Name: name, Status: status,
		CreatedAt: store.ParseTime(at), FinishedAt: store.ParseTime(fin.String)}, nil
}

// workflowShard returns the shard of workflow id, or ErrWorkflowNotFound.
func (s *Store) workflowShard(id int64) (*shardDB, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	jid := store.JobID(id)
	if id <= 0 || jid.Shard() >= len(s.shards) {
		return nil, store.ErrWorkflowNotFound
	}
	return s.shards[jid.Shard()], nil
}

// Workflow returns one workflow with its steps; see store.WorkflowStore.
func (s *Store) Workflow(ctx context.Context, id int64) (*store.WorkflowRecord, error) {
	sh, err := s.workflowShard(id)
	if err != nil {
		return nil, err
	}
	seq := store.JobID(id).Seq()
	w, err := scanWorkflow(sh.r.QueryRowContext(ctx, `SELECT `+wfColumns+` FROM qm_workflows WHERE id = ?`, seq), sh.idx)
	if errors.Is(err, sql.ErrNoRows) || isNoTable(err) {
		return nil, store.ErrWorkflowNotFound
	}
	if err != nil {
		return nil, err
	}
	rows, err := sh.r.QueryContext(ctx, `SELECT s.job_id, s.name, coalesce(s.task, ''), s.state, coalesce(f.status, ''),
		coalesce(s.deps_after, 'null'), coalesce(s.deps_settled, 'null'), coalesce(s.binds, 'null'), coalesce(s.reason, '')
		FROM qm_wf_steps s LEFT JOIN fila f ON f.id = s.job_id WHERE s.wf_id = ? ORDER BY s.pos`, seq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			job                 int64
			st                  store.WorkflowStepRecord
			jobStatus           string
			after, settled, bnd string
		)
		if err := rows.Scan(&job, &st.Name, &st.Task, &st.State, &jobStatus, &after, &settled, &bnd, &st.Reason); err != nil {
			return nil, err
		}
		st.JobID = store.NewJobID(sh.idx, job)
		st.Job = store.Status(jobStatus)
		_ = json.Unmarshal([]byte(after), &st.After)
		_ = json.Unmarshal([]byte(settled), &st.Settled)
		_ = json.Unmarshal([]byte(bnd), &st.Binds)
		w.Steps = append(w.Steps, st)
	}
	return w, rows.Err()
}

// isNoTable reports an error of a file that has no workflow tables (a
// queue-max file opened read-only, not migrated).
func isNoTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// Workflows lists workflows, newest first; see store.WorkflowStore.
func (s *Store) Workflows(ctx context.Context, p store.WorkflowFilter) ([]*store.WorkflowRecord, error) {
	list, err := s.shardList(store.AllShards)
	if err != nil {
		return nil, err
	}
	limit := p.MaxRows()
	var where []string
	var args []any
	if p.Status != "" {
		where = append(where, "status = ?")
		args = append(args, p.Status)
	}
	if p.Name != "" {
		where = append(where, "name = ?")
		args = append(args, p.Name)
	}
	var before *store.WorkflowRecord
	if p.Before != 0 {
		if before, err = s.Workflow(ctx, p.Before); err != nil {
			return nil, err
		}
	}
	var out []*store.WorkflowRecord
	for _, sh := range list {
		w, a := slices.Clone(where), slices.Clone(args)
		if before != nil {
			// Older: created earlier, or at the same time with a smaller
			// (shard, sequence).
			bj := store.JobID(before.ID)
			w = append(w, "(created_at < ? OR (created_at = ? AND (? > ? OR (? = ? AND id < ?))))")
			at := store.FormatTime(before.CreatedAt)
			a = append(a, at, at, bj.Shard(), sh.idx, bj.Shard(), sh.idx, bj.Seq())
		}
		q := `SELECT ` + wfColumns + ` FROM qm_workflows`
		if len(w) > 0 {
			q += ` WHERE ` + strings.Join(w, " AND ")
		}
		q += ` ORDER BY id DESC LIMIT ?`
		a = append(a, limit)
		rows, err := sh.r.QueryContext(ctx, q, a...)
		if isNoTable(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", sh.idx, err)
		}
		for rows.Next() {
			wf, err := scanWorkflow(rows, sh.idx)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, wf)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	SortWorkflows(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// SortWorkflows orders a listing newest first: by creation time, then ID.
func SortWorkflows(ws []*store.WorkflowRecord) {
	slices.SortStableFunc(ws, func(a, b *store.WorkflowRecord) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}

// CancelWorkflow cancels a workflow's unfinished steps; see
// store.WorkflowStore.
func (s *Store) CancelWorkflow(ctx context.Context, id int64, now time.Time) (bool, error) {
	sh, err := s.workflowShard(id)
	if err != nil {
		return false, err
	}
	var finished bool
	seq := store.JobID(id).Seq()
	ts := store.FormatTime(now)
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		finished = false
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM qm_workflows WHERE id = ?`, seq).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return asItem(store.ErrWorkflowNotFound)
		}
		if err != nil || status != store.WorkflowRunning {
			return err
		}
		// Mark first, so that a step released by the cascade below (an
		// AfterSettled one) is cancelled rather than run.
		for _, q := range []string{
			`UPDATE qm_workflows SET cancelled = 1 WHERE id = ?1`,
			`UPDATE qm_wf_steps SET blocked = coalesce(blocked, 'workflow cancelled') WHERE wf_id = ?1 AND state = 'waiting'`,
			`UPDATE fila SET status = 'cancelled', completed_at = ?2, last_error = 'workflow cancelled', error_type = 'WorkflowCancelled'
				WHERE wf_id = ?1 AND status IN ('pending', 'scheduled')`,
			`UPDATE fila SET cancel_requested = 1 WHERE wf_id = ?1 AND status = 'processing'`,
		} {
			if _, err := tx.ExecContext(ctx, q, seq, ts); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, `SELECT status FROM qm_workflows WHERE id = ?`, seq).Scan(&status); err != nil {
			return err
		}
		finished = status != store.WorkflowRunning
		return nil
	})
	var ie itemError
	if errors.As(err, &ie) {
		return false, ie.err
	}
	return finished, err
}

// StepResult returns a step's stored result; see store.WorkflowStore.
func (s *Store) StepResult(ctx context.Context, job store.JobID, step string) (store.StepOutput, error) {
	var out store.StepOutput
	sh, err := s.shard(job.Shard())
	if err != nil {
		return out, err
	}
	var state, result sql.NullString
	rows, err := sh.rquery(ctx, `SELECT d.state, d.result FROM qm_wf_steps s
		LEFT JOIN qm_wf_steps d ON d.wf_id = s.wf_id AND d.name = ? WHERE s.job_id = ?`, step, job.Seq())
	if err == nil {
		if rows.Next() {
			err = rows.Scan(&state, &result)
		} else if err = rows.Err(); err == nil {
			err = sql.ErrNoRows
		}
		rows.Close()
	}
	if errors.Is(err, sql.ErrNoRows) || isNoTable(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.InWorkflow, out.Known, out.State = true, state.Valid, state.String
	if result.Valid {
		out.Result = json.RawMessage(result.String)
	}
	return out, nil
}

// FinishedBy returns the workflows whose end one of jobs recorded; see
// store.WorkflowStore.
func (s *Store) FinishedBy(ctx context.Context, jobs []store.JobID) ([]*store.WorkflowRecord, error) {
	byShard := map[int][]int64{}
	for _, j := range jobs {
		byShard[j.Shard()] = append(byShard[j.Shard()], j.Seq())
	}
	var out []*store.WorkflowRecord
	for i, seqs := range byShard {
		sh, err := s.shard(i)
		if err != nil {
			return out, err
		}
		rows, err := sh.rquery(ctx, `SELECT `+wfColumns+` FROM qm_workflows WHERE id IN
			(SELECT wf_id FROM qm_wf_steps WHERE job_id IN (SELECT value FROM json_each(?1)))
			AND finisher IN (SELECT value FROM json_each(?1))`, idList(len(seqs), func(k int) int64 { return seqs[k] }))
		if isNoTable(err) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("shard %d: %w", sh.idx, err)
		}
		for rows.Next() {
			w, err := scanWorkflow(rows, sh.idx)
			if err != nil {
				rows.Close()
				return out, err
			}
			out = append(out, w)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// WorkflowCounts counts workflows by status; see store.WorkflowStore.
func (s *Store) WorkflowCounts(ctx context.Context) (map[string]int64, error) {
	list, err := s.shardList(store.AllShards)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, sh := range list {
		rows, err := sh.r.QueryContext(ctx, `SELECT status, count(*) FROM qm_workflows GROUP BY status`)
		if isNoTable(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", sh.idx, err)
		}
		for rows.Next() {
			var st string
			var n int64
			if err := rows.Scan(&st, &n); err != nil {
				rows.Close()
				return nil, err
			}
			out[st] += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
