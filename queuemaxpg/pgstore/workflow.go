package pgstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queuemax/queuemax/runtime/store"
)

var _ store.WorkflowStore = (*Store)(nil)

func (s *Store) x(q string) string { return expand(q, pgx.Identifier{s.schema}.Sanitize(), s.host) }

// InsertWorkflow stores a workflow; see store.WorkflowStore. It is one
// statement (atomic by itself): one round trip, no transaction block.
func (s *Store) InsertWorkflow(ctx context.Context, p *store.WorkflowParams) (int64, []store.JobID, error) {
	if err := s.writable(); err != nil {
		return 0, nil, err
	}
	var id int64
	var ids []store.JobID
	err := s.retryInsert(ctx, func() error {
		var err error
		id, ids, err = s.insertWorkflow(ctx, poolQuerier{s}, p)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	s.lis.bump()
	return id, ids, nil
}

// InsertWorkflowTx stores a workflow inside the caller's transaction; see
// store.WorkflowTxInserter.
func (s *Store) InsertWorkflowTx(ctx context.Context, tx any, p *store.WorkflowParams) (int64, []store.JobID, error) {
	if err := s.writable(); err != nil {
		return 0, nil, err
	}
	switch t := tx.(type) {
	case pgx.Tx:
		return s.insertWorkflow(ctx, pgxQuerier{t}, p)
	case *sql.Tx:
		return s.insertWorkflow(ctx, sqlQuerier{t}, p)
	}
	return 0, nil, fmt.Errorf("queuemax: InsertWorkflowTx: unsupported transaction type %T (want pgx.Tx, or *sql.Tx from the pgx stdlib driver)", tx)
}

// sqlInsertWorkflow writes a workflow in one statement: it takes the
// workflow's id and its jobs' (k, ascending in step order), writes the
// workflow's row, its jobs (each once, with its workflow and, for a
// waiting step, as a scheduled row without a time, which nothing claims),
// its step rows, edges and bindings, and returns the workflow's id then
// the jobs'. The step rows, edges, bindings and waiting steps name a
// step's job by its position (1-based), k.ids[pos] its id. $1 now, $2
// shard, $3 name, $4 steps, $5 the waiting steps, $6–$8 the step rows,
// edges and bindings as JSON, $9–$21 the jobs' columns as sqlInsert's. {q}
// is the quoted schema as a string literal's text.
var sqlInsertWorkflow = `WITH k AS MATERIALIZED (SELECT nextval('{q}.workflows_id_seq') AS wf,
		(SELECT array_agg(nextval('{q}.jobs_id_seq')) FROM generate_series(1, $4::integer)) AS ids),
	w AS (INSERT INTO {s}.workflows (id, shard, name, steps, unended, created_at)
		SELECT k.wf, $2, $3, $4, $4, @now FROM k),
	j AS (INSERT INTO {s}.jobs (` + wfJobCols + `)
		SELECT ` + wfJobVals + `
		FROM k, ` + insUnnest(9, "pos") + `),
	st AS (INSERT INTO {s}.wf_steps (job_id, wf_id, pos, name, task, deps_after, deps_settled, binds, waits, state, run_at)
		SELECT k.ids[(e->>'j')::integer], k.wf, (e->>'p')::integer, e->>'n', nullif(e->>'t', ''), e->'a', e->'s', e->'b',
			(e->>'w')::integer, CASE WHEN (e->>'w')::integer > 0 THEN 'waiting' ELSE 'ready' END, nullif(e->>'r', '')::timestamptz
		FROM k, jsonb_array_elements($6::jsonb) e),
	ed AS (INSERT INTO {s}.wf_edges (dep, job, settled)
		SELECT k.ids[(e->>0)::integer], k.ids[(e->>1)::integer], (e->>2)::integer = 1 FROM k, jsonb_array_elements($7::jsonb) e),
	bd AS (INSERT INTO {s}.wf_binds (dep, job, param)
		SELECT k.ids[(e->>0)::integer], k.ids[(e->>1)::integer], e->>2 FROM k, jsonb_array_elements($8::jsonb) e)
	SELECT wf FROM k UNION ALL SELECT unnest(ids) FROM k`

// wfJobCols and wfJobVals are sqlInsert's, with the ids taken (k) and,
// for a waiting step ($5), a scheduled row without a time.
var wfJobCols, wfJobVals = insertSelect(map[string]string{"id": "k.ids[u.pos]", "wf_id": "k.wf",
	"status":        `CASE WHEN u.pos = ANY($5::integer[]) OR u.delay > 0 THEN 'scheduled' ELSE 'pending' END`,
	"next_retry_at": `CASE WHEN u.pos = ANY($5::integer[]) THEN NULL WHEN u.delay > 0 THEN @rownow + u.delay` + us + ` END`})

func (s *Store) insertWorkflow(ctx context.Context, tx querier, p *store.WorkflowParams) (int64, []store.JobID, error) {
	if err := s.checkShard(p.Shard); err != nil {
		return 0, nil, err
	}
	if len(p.Steps) == 0 {
		return 0, nil, errors.New("queuemax: workflow without steps")
	}
	jobs := make([]store.InsertParams, len(p.Steps))
	for i := range p.Steps {
		jobs[i] = p.Steps[i].Job
		jobs[i].Shard = p.Shard
		if jobs[i].Unique != nil {
			return 0, nil, fmt.Errorf("queuemax: workflow step %q: unique jobs cannot be workflow steps", p.Steps[i].Name)
		}
	}
	now := p.Now
	if now.IsZero() {
		now = hostNow()
	}
	// The rows name each step's job by its position: 1-based "ids".
	pos := make([]store.JobID, len(jobs))
	for i := range pos {
		pos[i] = store.NewJobID(p.Shard, int64(i+1))
	}
	steps, edges, binds, waiting := store.WorkflowRows(p, pos)
	if waiting == nil {
		waiting = []int64{}
	}
	if edges == nil {
		edges = [][3]any{}
	}
	if binds == nil {
		binds = [][3]any{}
	}
	sj, err := json.Marshal(steps)
	if err != nil {
		return 0, nil, err
	}
	ej, _ := json.Marshal(edges)
	bj, _ := json.Marshal(binds)
	args := append([]any{now, int32(p.Shard), p.Name, int32(len(p.Steps)), waiting, string(sj), string(ej), string(bj)},
		jobArrays(jobs)...)
	seqs, err := tx.ids(ctx, s.q.insertWorkflow, args...)
	if err != nil {
		return 0, nil, fmt.Errorf("queuemax: insert workflow: %w", err)
	}
	if len(seqs) != len(jobs)+1 {
		return 0, nil, fmt.Errorf("queuemax: insert workflow: %d jobs written for %d steps", len(seqs)-1, len(jobs))
	}
	ids := make([]store.JobID, len(jobs))
	for i, seq := range seqs[1:] {
		ids[i] = store.NewJobID(p.Shard, seq)
	}
	return int64(store.NewJobID(p.Shard, seqs[0])), ids, nil
}

const wfColumns = `id, shard, name, status, created_at, finished_at`

// wfColumnsOf is wfColumns of the workflows row aliased w.
const wfColumnsOf = `w.id, w.shard, w.name, w.status, w.created_at, w.finished_at`

func scanWorkflow(r pgx.Row) (*store.WorkflowRecord, error) {
	var (
		id            int64
		shard         int32
		name, status  string
		created, done pgtype.Timestamptz
	)
	if err := r.Scan(&id, &shard, &name, &status, &created, &done); err != nil {
		return nil, err
	}
	return &store.WorkflowRecord{ID: int64(store.NewJobID(int(shard), id)), Name: name, Status: status,
		CreatedAt: toTime(created), FinishedAt: toTime(done)}, nil
}

// wfKey returns the row id and shard of workflow id.
func (s *Store) wfKey(id int64) (int64, int32, error) {
	if s.closed.Load() {
		return 0, 0, store.ErrClosed
	}
	j := store.JobID(id)
	if id <= 0 || j.Shard() >= s.shards {
		return 0, 0, store.ErrWorkflowNotFound
	}
	return j.Seq(), int32(j.Shard()), nil
}

// Workflow returns one workflow with its steps; see store.WorkflowStore.
func (s *Store) Workflow(ctx context.Context, id int64) (*store.WorkflowRecord, error) {
	seq, shard, err := s.wfKey(id)
	if err != nil {
		return nil, err
	}
	w, err := scanWorkflow(s.queryRow(ctx, `SELECT `+wfColumns+` FROM {s}.workflows WHERE id = $1 AND shard = $2`, seq, shard))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrWorkflowNotFound
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, `SELECT s.job_id, s.name, coalesce(s.task, ''), s.state, coalesce(j.status, ''),
		coalesce(s.deps_after, 'null')::text, coalesce(s.deps_settled, 'null')::text, coalesce(s.binds, 'null')::text, coalesce(s.reason, '')
		FROM {s}.wf_steps s LEFT JOIN {s}.jobs j ON j.id = s.job_id WHERE s.wf_id = $1 ORDER BY s.pos`, seq)
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
		st.JobID = store.NewJobID(int(shard), job)
		st.Job = store.Status(jobStatus)
		_ = json.Unmarshal([]byte(after), &st.After)
		_ = json.Unmarshal([]byte(settled), &st.Settled)
		_ = json.Unmarshal([]byte(bnd), &st.Binds)
		w.Steps = append(w.Steps, st)
	}
	return w, rows.Err()
}

// Workflows lists workflows, newest first; see store.WorkflowStore.
func (s *Store) Workflows(ctx context.Context, p store.WorkflowFilter) ([]*store.WorkflowRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	conds := []string{"true"}
	args := []any{}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch p.Status {
	case "":
	case store.WorkflowRunning:
		// A constant, so that every plan can read workflows_running.
		conds = append(conds, "status = 'running'")
	default:
		conds = append(conds, "status = "+arg(p.Status))
	}
	if p.Name != "" {
		conds = append(conds, "name = "+arg(p.Name))
	}
	if p.Before != 0 {
		seq, shard, err := s.wfKey(p.Before)
		if err != nil {
			return nil, err
		}
		b, err := scanWorkflow(s.queryRow(ctx, `SELECT `+wfColumns+` FROM {s}.workflows WHERE id = $1 AND shard = $2`, seq, shard))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, store.ErrWorkflowNotFound
		}
		if err != nil {
			return nil, err
		}
		conds = append(conds, "(created_at, id) < ("+arg(b.CreatedAt)+"::timestamptz, "+arg(seq)+"::bigint)")
	}
	rows, err := s.query(ctx, `SELECT `+wfColumns+` FROM {s}.workflows WHERE `+strings.Join(conds, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT `+arg(p.MaxRows()), args...)
	if err != nil {
		return nil, err
	}
	return scanWorkflows(rows)
}

// CancelWorkflow cancels a workflow's unfinished steps; see
// store.WorkflowStore.
func (s *Store) CancelWorkflow(ctx context.Context, id int64, now time.Time) (bool, error) {
	if err := s.writable(); err != nil {
		return false, err
	}
	seq, shard, err := s.wfKey(id)
	if err != nil {
		return false, err
	}
	var finished bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		finished = false
		var status string
		err := tx.QueryRow(ctx, s.sql(`SELECT status FROM {s}.workflows WHERE id = $1 AND shard = $2 FOR UPDATE`), seq, shard).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrWorkflowNotFound
		}
		if err != nil || status != store.WorkflowRunning {
			return err
		}
		// Mark first, so that a step released by the cascade below (an
		// AfterSettled one) is cancelled rather than run.
		for _, q := range []string{
			`UPDATE {s}.workflows SET cancelled = true WHERE id = $2 AND $1::timestamptz IS NOT NULL`,
			`UPDATE {s}.wf_steps SET blocked = coalesce(blocked, 'workflow cancelled') WHERE wf_id = $2 AND state = 'waiting' AND $1::timestamptz IS NOT NULL`,
			`UPDATE {s}.jobs SET status = 'cancelled', completed_at = @now, last_error = 'workflow cancelled', error_type = 'WorkflowCancelled'
				WHERE ` + wfJobsOf + ` AND wf_id = $2 AND status IN ('pending', 'scheduled')`,
			`UPDATE {s}.jobs SET cancel_requested = true WHERE ` + wfJobsOf + ` AND wf_id = $2 AND status = 'processing' AND $1::timestamptz IS NOT NULL`,
		} {
			if _, err := tx.Exec(ctx, s.x(q), now, seq); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, s.sql(`SELECT status FROM {s}.workflows WHERE id = $1`), seq).Scan(&status); err != nil {
			return err
		}
		finished = status != store.WorkflowRunning
		return nil
	})
	return finished, err
}

// StepResult returns a step's stored result; see store.WorkflowStore.
func (s *Store) StepResult(ctx context.Context, job store.JobID, step string) (store.StepOutput, error) {
	var out store.StepOutput
	if s.closed.Load() {
		return out, store.ErrClosed
	}
	var state pgtype.Text
	var result []byte
	err := s.queryRow(ctx, `SELECT d.state, d.result FROM {s}.wf_steps t
		LEFT JOIN {s}.wf_steps d ON d.wf_id = t.wf_id AND d.name = $1 WHERE t.job_id = $2`, step, job.Seq()).Scan(&state, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.InWorkflow, out.Known, out.State = true, state.Valid, state.String
	if result != nil {
		out.Result = json.RawMessage(result)
	}
	return out, nil
}

// FinishedBy returns the workflows whose end one of jobs recorded; see
// store.WorkflowStore.
func (s *Store) FinishedBy(ctx context.Context, jobs []store.JobID) ([]*store.WorkflowRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	seqs := make([]int64, len(jobs))
	for i, j := range jobs {
		seqs[i] = j.Seq()
	}
	// By the step's row then its workflow's, both by primary key.
	rows, err := s.query(ctx, `SELECT `+wfColumnsOf+`
		FROM {s}.wf_steps st JOIN {s}.workflows w ON w.id = st.wf_id AND w.finisher = st.job_id
		WHERE st.job_id = ANY($1::bigint[])`, seqs)
	if err != nil {
		return nil, err
	}
	return scanWorkflows(rows)
}

// WorkflowCounts counts workflows by status; see store.WorkflowStore.
func (s *Store) WorkflowCounts(ctx context.Context) (map[string]int64, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.query(ctx, `SELECT status, count(*) FROM {s}.workflows GROUP BY status`)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	var st string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		out[st] += n
		return nil
	})
	return out, err
}

// pruneWorkflows deletes the finished workflows whose end is before the
// cutoff of their status, with their steps and the steps' jobs still
// stored (Prune's first part): a workflow is kept as long as its steps.
func (s *Store) pruneWorkflows(ctx context.Context, p store.PruneParams, now time.Time) (workflows, jobs int, err error) {
	completed := p.CompletedBefore
	if !p.KeepResultsAfter.IsZero() && p.KeepResultsAfter.Before(completed) {
		completed = p.KeepResultsAfter
	}
	if p.CompletedBefore.IsZero() && p.FinishedBefore.IsZero() {
		return 0, 0, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.x(`DELETE FROM {s}.workflows WHERE status <> 'running' AND (
				($3 AND status = 'completed' AND finished_at < @now + $2`+us+`)
				OR ($5 AND status IN ('failed', 'cancelled') AND finished_at < @now + $4`+us+`))
			RETURNING id`), now, offset(completed, now), !p.CompletedBefore.IsZero(), offset(p.FinishedBefore, now), !p.FinishedBefore.IsZero())
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		workflows = len(ids)
		tag, err := tx.Exec(ctx, s.sql(`DELETE FROM {s}.jobs WHERE id = ANY(ARRAY(SELECT job_id FROM {s}.wf_steps WHERE wf_id = ANY($1::bigint[])))
			AND wf_id = ANY($1::bigint[])`), ids)
		if err != nil {
			return err
		}
		jobs = int(tag.RowsAffected())
		for _, q := range []string{
			`DELETE FROM {s}.wf_edges WHERE job IN (SELECT job_id FROM {s}.wf_steps WHERE wf_id = ANY($1::bigint[]))`,
			`DELETE FROM {s}.wf_binds WHERE job IN (SELECT job_id FROM {s}.wf_steps WHERE wf_id = ANY($1::bigint[]))`,
			`DELETE FROM {s}.wf_steps WHERE wf_id = ANY($1::bigint[])`,
			`DELETE FROM {s}.wf_ends WHERE id = ANY($1::bigint[])`,
		} {
			if _, err := tx.Exec(ctx, s.sql(q), ids); err != nil {
				return err
			}
		}
		return nil
	})
	return workflows, jobs, err
}

// scanWorkflows reads every row of rows (wfColumns) and closes them.
func scanWorkflows(rows pgx.Rows) ([]*store.WorkflowRecord, error) {
	defer rows.Close()
	var out []*store.WorkflowRecord
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}
