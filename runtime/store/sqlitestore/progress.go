package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Job steps' progress (store.JobProgress) is fila.progress: a JSON object
// keyed by step name, NULL for a job that records none. queue-max neither
// reads nor writes the column (schema version 17).

// progressMigration adds the column.
var progressMigration = migration{
	version: 17,
	name:    "job steps: each job's recorded progress",
	addColumns: [][3]string{
		{"fila", "progress", "TEXT"},
	},
}

const (
	// sqlSetProgress sets one step's entry (?1 is its JSON path, $."name")
	// while the lease holds: the fence and the write in one statement.
	sqlSetProgress = `UPDATE fila SET progress = json_set(coalesce(progress, '{}'), ?1, json(?2))
		WHERE id = ?3 AND lease = ?4 AND status = 'processing' AND (?5 = '' OR worker_id = ?5)`
	// sqlResetProgress replaces a job's progress unless a worker holds it;
	// RETURNING says whether the job exists and its status.
	sqlResetProgress = `UPDATE fila SET progress = CASE WHEN status = 'processing' THEN progress ELSE ?1 END
		WHERE id = ?2 RETURNING status`
)

// stepPath is the JSON path of a step's entry. CheckStepName has ruled out
// the double quote that would end the quoted label.
func stepPath(name string) string { return `$."` + name + `"` }

// SetProgress writes one step's entry, fenced by the lease; see
// store.JobProgress.
func (s *Store) SetProgress(ctx context.Context, p store.ProgressParams) error {
	if err := store.CheckStepName(p.Step.Name); err != nil {
		return err
	}
	sh, err := s.shard(p.ID.Shard())
	if err != nil {
		return err
	}
	entry, err := store.EncodeProgressEntry(p.Step, p.Seq, p.Now)
	if err != nil {
		return err
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		n, err := affected(tx.ExecContext(ctx, sqlSetProgress, stepPath(p.Step.Name), string(entry), p.ID.Seq(), p.Token, p.WorkerID))
		if err != nil {
			return err
		}
		if n == 0 {
			return asItem(fmt.Errorf("%w: job %d, step %q", store.ErrLeaseLost, p.ID, p.Step.Name))
		}
		return nil
	})
}

// SetProgressTx returns store.ErrProgressTxUnsupported: an application's
// transaction cannot span a shard file.
func (s *Store) SetProgressTx(context.Context, any, store.ProgressParams) error {
	return store.ErrProgressTxUnsupported
}

// Progress returns a job's recorded progress; see store.JobProgress.
func (s *Store) Progress(ctx context.Context, id store.JobID) ([]store.JobStep, error) {
	sh, err := s.shard(id.Shard())
	if err != nil {
		return nil, err
	}
	var raw sql.NullString
	err = sh.r.QueryRowContext(ctx, `SELECT progress FROM fila WHERE id = ?`, id.Seq()).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", store.ErrJobNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("shard %d: read job %d's progress: %w", sh.idx, id, err)
	}
	return store.DecodeProgress([]byte(raw.String)), nil
}

// ResetProgress replaces the progress of a job no worker holds; see
// store.JobProgress.
func (s *Store) ResetProgress(ctx context.Context, id store.JobID, steps []store.JobStep, now time.Time) error {
	raw, err := store.EncodeProgress(steps, now)
	if err != nil {
		return err
	}
	sh, err := s.shard(id.Shard())
	if err != nil {
		return err
	}
	var v any
	if raw != nil {
		v = string(raw)
	}
	return sh.commit.do(ctx, func(ctx context.Context, tx *sql.Tx, _ *groupCounts) error {
		var status string
		err := tx.QueryRowContext(ctx, sqlResetProgress, v, id.Seq()).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return asItem(fmt.Errorf("%w: %d", store.ErrJobNotFound, id))
		}
		if err != nil {
			return err
		}
		if status == string(store.StatusProcessing) {
			return asItem(fmt.Errorf("%w: job %d: its steps' progress can change only while no worker holds it", store.ErrJobProcessing, id))
		}
		return nil
	})
}
