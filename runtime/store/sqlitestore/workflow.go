package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

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

// stepJobsSQL returns the INSERT of n steps' job rows (wfCols: insertCols
// and the workflow).
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
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(wfCols)), ", ") + ")"
	return `INSERT INTO fila (` + namesOf(wfCols) + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// insertStepJobs writes the steps' job rows with their workflow, up to
// wfStepRowsMax per statement: a step that waits is written scheduled
// without a time (its run-at time is in its step row), so nothing claims
// it before its release.
func insertStepJobs(ctx context.Context, tx *sql.Tx, sh *shardDB, p *store.WorkflowParams, jobs []store.InsertParams, wf int64, ids []store.JobID) error {
	for start := 0; start < len(jobs); start += wfStepRowsMax {
		n := min(wfStepRowsMax, len(jobs)-start)
		args := make(argRow, 0, n*len(wfCols))
		for i := start; i < start+n; i++ {
			v := rowVals{j: &jobs[i], shard: sh.idx, wf: wf, waits: len(store.StepDeps(p.Steps[i])) > 0}
			v.putRow(&args, wfCols)
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
		var tagged []int64
		for k := range n {
			ids[start+k] = store.NewJobID(sh.idx, last-int64(n-1-k))
			if len(jobs[start+k].Tags) > 0 {
				tagged = append(tagged, ids[start+k].Seq())
			}
		}
		if err := sh.insertTags(ctx, tx, tagged); err != nil {
			return fmt.Errorf("insert workflow job tags: %w", err)
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
	return repairReopens(ctx, tx) // workflow_retry.go
}
