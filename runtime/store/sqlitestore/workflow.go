package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

var _ store.WorkflowStore = (*Store)(nil)

const (
	sqlWfInsert      = `INSERT INTO qm_workflows (name, steps, unended, created_at) VALUES (?, ?, ?, ?)`
	sqlWfInsertSteps = `INSERT INTO qm_wf_steps (job_id, wf_id, pos, name, task, deps_after, deps_settled, binds, waits, state, run_at)
		SELECT e.value ->> 'j', ?1, e.value ->> 'p', e.value ->> 'n', nullif(e.value ->> 't', ''),
			e.value -> 'a', e.value -> 's', e.value -> 'b', e.value ->> 'w',
			CASE WHEN e.value ->> 'w' > 0 THEN 'waiting' ELSE 'ready' END, nullif(e.value ->> 'r', '')
		FROM json_each(?2) e`
	sqlWfInsertEdges = `INSERT INTO qm_wf_edges (dep, job, settled)
		SELECT e.value ->> 0, e.value ->> 1, e.value ->> 2 FROM json_each(?1) e`
	sqlWfInsertBinds = `INSERT INTO qm_wf_binds (dep, job, param)
		SELECT e.value ->> 0, e.value ->> 1, e.value ->> 2 FROM json_each(?1) e`
)

// wfStmts are a shard's workflow statements, prepared on first use: the
// writer's (bound to each transaction with tx.StmtContext) and the
// readers'.
type wfStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// stmt returns q prepared on db, preparing it once.
func (w *wfStmts) stmt(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.m[q]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if w.m == nil {
		w.m = map[string]*sql.Stmt{}
	}
	w.m[q] = st
	return st, nil
}

func (w *wfStmts) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.m {
		st.Close()
	}
	w.m = nil
}

// wfStepRowsMax is the largest workflow whose step rows are one
// multi-row INSERT of bound values (11 per row, well within SQLite's
// variable limit); larger ones go through json_each.
const wfStepRowsMax = 256

// wfSQLCache holds stepRowsSQL and stepJobsSQL by row count, built once.
var wfSQLCache sync.Map // int -> *[2]string

func wfSQL(n int) *[2]string {
	if v, ok := wfSQLCache.Load(n); ok {
		return v.(*[2]string)
	}
	v, _ := wfSQLCache.LoadOrStore(n, &[2]string{buildStepRowsSQL(n), buildStepJobsSQL(n)})
	return v.(*[2]string)
}

// stepRowsSQL returns the INSERT of n step rows.
func stepRowsSQL(n int) string { return wfSQL(n)[0] }

// stepJobsSQL returns the INSERT of n steps' job rows: insertColumns and
// the workflow.
func stepJobsSQL(n int) string { return wfSQL(n)[1] }

func buildStepRowsSQL(n int) string {
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	return `INSERT INTO qm_wf_steps (job_id, wf_id, pos, name, task, deps_after, deps_settled, binds, waits, state, run_at) VALUES ` +
		strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// insertStepRows writes the step rows: bound values for a workflow of up
// to wfStepRowsMax steps (no JSON to unpack per column), json_each beyond.
func insertStepRows(ctx context.Context, tx *sql.Tx, sh *shardDB, wf int64, steps []store.WorkflowStepRow) error {
	if len(steps) > wfStepRowsMax {
		b, err := json.Marshal(steps)
		if err != nil {
			return err
		}
		_, err = sh.wexec(ctx, tx, sqlWfInsertSteps, wf, string(b))
		return err
	}
	args := make([]any, 0, 11*len(steps))
	names := func(v []string) any {
		if len(v) == 0 {
			return nil
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	bindList := func(v []store.WorkflowBind) any {
		if len(v) == 0 {
			return nil
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	for _, st := range steps {
		state := store.StepReady
		if st.Waits > 0 {
			state = store.StepWaiting
		}
		var task, runAt any
		if st.Task != "" {
			task = st.Task
		}
		if st.RunAt != "" {
			runAt = st.RunAt
		}
		args = append(args, st.Job, wf, st.Pos, st.Name, task, names(st.After), names(st.Settled), bindList(st.Binds), st.Waits, state, runAt)
	}
	_, err := sh.wexec(ctx, tx, stepRowsSQL(len(steps)), args...)
	return err
}

func buildStepJobsSQL(n int) string {
	row := "(" + strings.Repeat("?, ", len(insertColumns)) + "?)"
	return `INSERT INTO fila (` + insertNames + `, wf_id) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// wfColumnIndex is the position of insertColumns' name.
func wfColumnIndex(name string) int {
	for i, c := range insertColumns {
		if c.name == name {
			return i
		}
	}
	panic("sqlitestore: no insert column " + name)
}

var wfStatusCol, wfNextCol = wfColumnIndex("status"), wfColumnIndex("next_retry_at")

// insertStepJobs writes the steps' job rows with their workflow, up to
// wfStepRowsMax per statement: a step that waits is written scheduled
// without a time (its run-at time is in its step row), so nothing claims
// it before its release.
func insertStepJobs(ctx context.Context, tx *sql.Tx, sh *shardDB, p *store.WorkflowParams, jobs []store.InsertParams, wf int64, ids []store.JobID) error {
	width := len(insertColumns) + 1
	for start := 0; start < len(jobs); start += wfStepRowsMax {
		n := min(wfStepRowsMax, len(jobs)-start)
		args := make(argRow, 0, n*width)
		for i := start; i < start+n; i++ {
			k := len(args)
			insertRow(&args, sh, jobs[i], "")
			if len(store.StepDeps(p.Steps[i])) > 0 {
				args[k+wfStatusCol], args[k+wfNextCol] = string(store.StatusScheduled), nil
			}
			args = append(args, wf)
		}
		res, err := sh.wexec(ctx, tx, stepJobsSQL(n), args...)
		if err != nil {
			return fmt.Errorf("insert workflow jobs: %w", err)
		}
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		// One statement under the write lock: consecutive ids in order.
		for k := range n {
			ids[start+k] = store.NewJobID(sh.idx, last-int64(n-1-k))
		}
	}
	return nil
}

// wfWriterStmts are the statements InsertWorkflow prepares on the writer.
var wfWriterStmts = []string{sqlWfInsert, sqlWfInsertSteps, sqlWfInsertEdges, sqlWfInsertBinds}

// wprepare prepares the writer's workflow statements. It must run outside
// a transaction: the writer has one connection, which a transaction holds.
func (sh *shardDB) wprepare(ctx context.Context) error {
	for _, q := range wfWriterStmts {
		if _, err := sh.wf.stmt(ctx, sh.w, q); err != nil {
			return err
		}
	}
	return nil
}

// wexec runs q in tx with the shard writer's prepared statement (see
// wprepare), or unprepared.
func (sh *shardDB) wexec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	sh.wf.mu.Lock()
	st := sh.wf.m[q]
	sh.wf.mu.Unlock()
	if st == nil {
		return tx.ExecContext(ctx, q, args...)
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// rquery runs q on the shard's readers with a prepared statement.
func (sh *shardDB) rquery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := sh.wf.stmt(ctx, sh.r, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// InsertWorkflow stores a workflow; see store.WorkflowStore.
func (s *Store) InsertWorkflow(ctx context.Context, p *store.WorkflowParams) (int64, []store.JobID, error) {
	sh, err := s.shard(p.Shard)
	if err != nil {
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
	ids := make([]store.JobID, len(jobs))
	var wf int64
	if err := sh.wprepare(ctx); err != nil {
		return 0, nil, err
	}
	for _, n := range []int{min(len(p.Steps), wfStepRowsMax), len(p.Steps) % wfStepRowsMax} {
		if n == 0 {
			continue
		}
		if _, err := sh.wf.stmt(ctx, sh.w, stepRowsSQL(n)); err != nil {
			return 0, nil, err
		}
		if _, err := sh.wf.stmt(ctx, sh.w, stepJobsSQL(n)); err != nil {
			return 0, nil, err
		}
	}
	err = sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, counts *groupCounts) error {
		res, err := sh.wexec(ctx, tx, sqlWfInsert,
			p.Name, len(p.Steps), len(p.Steps), store.FormatTime(p.Now))
		if err == nil {
			wf, err = res.LastInsertId()
		}
		if err != nil {
			return fmt.Errorf("shard %d: insert workflow: %w", sh.idx, err)
		}
		if err := insertStepJobs(ctx, tx, sh, p, jobs, wf, ids); err != nil {
			return err
		}
		steps, edges, binds, _ := store.WorkflowRows(p, ids)
		if err := insertStepRows(ctx, tx, sh, wf, steps); err != nil {
			return fmt.Errorf("shard %d: insert workflow steps: %w", sh.idx, err)
		}
		if len(edges) > 0 {
			b, _ := json.Marshal(edges)
			if _, err := sh.wexec(ctx, tx, sqlWfInsertEdges, string(b)); err != nil {
				return err
			}
		}
		if len(binds) > 0 {
			b, _ := json.Marshal(binds)
			if _, err := sh.wexec(ctx, tx, sqlWfInsertBinds, string(b)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return int64(store.NewJobID(sh.idx, wf)), ids, nil
}

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

// pruneWorkflows deletes the finished workflows whose end is before the
// cutoff of their status (completed: completed; failed and cancelled:
// finished), with their steps' rows, edges and jobs: a workflow is kept
// as long as its steps are. It runs in Prune's transactions.
func pruneWorkflows(ctx context.Context, tx *sql.Tx, completed, finished string) (workflows, jobs int, err error) {
	var conds []string
	var args []any
	if completed != "" {
		conds = append(conds, `(status = 'completed' AND finished_at < ?)`)
		args = append(args, completed)
	}
	if finished != "" {
		conds = append(conds, `(status IN ('failed', 'cancelled') AND finished_at < ?)`)
		args = append(args, finished)
	}
	if len(conds) == 0 {
		return 0, 0, nil
	}
	sel := `SELECT id FROM qm_workflows WHERE status != 'running' AND (` + strings.Join(conds, " OR ") + `) LIMIT 1000`
	var ids []int64
	rows, err := tx.QueryContext(ctx, sel, args...)
	if isNoTable(err) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, 0, err
	}
	list := idList(len(ids), func(k int) int64 { return ids[k] })
	n := 0
	for i, q := range []string{
		`DELETE FROM fila WHERE wf_id IN (SELECT value FROM json_each(?1))`,
		`DELETE FROM qm_wf_edges WHERE job IN (SELECT job_id FROM qm_wf_steps WHERE wf_id IN (SELECT value FROM json_each(?1)))`,
		`DELETE FROM qm_wf_binds WHERE job IN (SELECT job_id FROM qm_wf_steps WHERE wf_id IN (SELECT value FROM json_each(?1)))`,
		`DELETE FROM qm_wf_steps WHERE wf_id IN (SELECT value FROM json_each(?1))`,
		`DELETE FROM qm_workflows WHERE id IN (SELECT value FROM json_each(?1))`,
	} {
		k, err := affected(tx.ExecContext(ctx, q, list))
		if err != nil {
			return 0, 0, err
		}
		if i == 0 {
			n = k
		}
	}
	return len(ids), n, nil
}

// pruneAllWorkflows runs pruneWorkflows on every shard, in batches.
func (s *Store) pruneAllWorkflows(ctx context.Context, p store.PruneParams) (workflows, jobs int, err error) {
	var completed, finished string
	if !p.CompletedBefore.IsZero() {
		c := p.CompletedBefore
		if !p.KeepResultsAfter.IsZero() && p.KeepResultsAfter.Before(c) {
			c = p.KeepResultsAfter
		}
		completed = store.FormatTime(c)
	}
	if !p.FinishedBefore.IsZero() {
		finished = store.FormatTime(p.FinishedBefore)
	}
	if completed == "" && finished == "" {
		return 0, 0, nil
	}
	list, err := s.shardList(store.AllShards)
	if err != nil {
		return 0, 0, err
	}
	for _, sh := range list {
		for {
			var w, j int
			err := sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
				var err error
				w, j, err = pruneWorkflows(ctx, tx, completed, finished)
				return err
			})
			if err != nil {
				return workflows, jobs, fmt.Errorf("shard %d: %w", sh.idx, err)
			}
			workflows, jobs = workflows+w, jobs+j
			if w < 1000 {
				break
			}
		}
	}
	return workflows, jobs, nil
}

// repairWorkflows runs sqlWorkflowRepair in RecoverOrphans' transaction.
func repairWorkflows(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, sqlWorkflowRepair); err != nil && !isNoTable(err) {
		return err
	}
	return nil
}
