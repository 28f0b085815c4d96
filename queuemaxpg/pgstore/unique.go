package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/runtime/store"
)

// sqlInsertUnique inserts one unique job unless jobs_unique already holds
// its key for a counted status (the arbiter of ON CONFLICT, decided by the
// index under concurrent inserts of any process). It returns the new id,
// or the holder's id negated; no row when the holder committed after the
// statement's snapshot was taken, so that it cannot be read yet (the
// caller runs it again). $1–$13 are sqlInsertOne's (rowArgs), $14 the
// key and $15 the counted statuses.
var sqlInsertUnique = func() string {
	cols, vals := insertSelect(map[string]string{"unique_key": "u.ukey"}, [2]string{"unique_states", "u.ustates"})
	return `WITH u AS (SELECT ` + insScalars() + `, $14::text AS ukey, $15::text[] AS ustates),
	ins AS (INSERT INTO {s}.jobs (` + cols + `)
		SELECT ` + vals + `
		FROM u{quiet}
		ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status = ANY (unique_states) DO NOTHING
		RETURNING id)
	SELECT id FROM ins
	UNION ALL
	SELECT -j.id FROM {s}.jobs j WHERE j.unique_key = $14 AND j.unique_key IS NOT NULL AND j.status = ANY (j.unique_states)
		AND NOT EXISTS (SELECT 1 FROM ins)`
}()

// uniqueTries bounds how often insertUniqueOne runs its statement while
// the key's holder is invisible to the statement's snapshot (committed
// meanwhile) or frees the key between two tries.
const uniqueTries = 5

func hasUnique(jobs []store.InsertParams) bool {
	for _, j := range jobs {
		if j.Unique != nil {
			return true
		}
	}
	return false
}

// insertUnique is Insert for a batch holding unique jobs: one transaction,
// so the batch stays all or nothing for its inserted jobs. Unique jobs do
// not join the group commit (each decides with its own statement).
func (s *Store) insertUnique(ctx context.Context, jobs []store.InsertParams) ([]store.JobID, error) {
	if len(jobs) == 1 {
		// One statement is atomic already: no transaction round trips.
		stmt, loud := s.q.insertUnique, s.notifies.loud(time.Now())
		if !loud {
			stmt = s.q.insertUniqueQuiet
		}
		var id store.JobID
		err := s.retryInsert(ctx, func() (err error) {
			id, err = insertUniqueOne(ctx, poolQuerier{s}, stmt, jobs[0])
			return err
		})
		if !loud || err != nil {
			s.notifies.quietDone() // see insertBatch
		}
		if err != nil {
			return nil, err
		}
		s.lis.bump()
		return []store.JobID{id}, nil
	}
	var ids []store.JobID
	err := s.retryInsert(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			ids, err = s.insertMixed(ctx, pgxQuerier{tx}, jobs)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	s.lis.bump()
	return ids, nil
}

// sqlLockUnique takes a transaction-level advisory lock per distinct key
// of a batch, in lock-id order ($1 the schema name, $2 the keys). Two
// transactions inserting the same keys in opposite orders would otherwise
// wait on each other's uncommitted rows (a deadlock PostgreSQL breaks only
// after deadlock_timeout, failing one); ordered locks make the later one
// wait for the earlier's commit instead, and then see its rows.
const sqlLockUnique = `SELECT count(pg_advisory_xact_lock(hashtext($1), h))
	FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY h) l`

// insertMixed writes jobs in input order through q, inside a transaction:
// runs of plain jobs with one plain statement each, unique jobs one by
// one, after locking their keys when there are several.
func (s *Store) insertMixed(ctx context.Context, q querier, jobs []store.InsertParams) ([]store.JobID, error) {
	plain, unique := s.q.insert, s.q.insertUnique
	var keys []string
	for _, j := range jobs {
		if j.Unique != nil {
			keys = append(keys, j.Unique.Key)
		}
	}
	if len(keys) > 1 {
		if _, err := q.ids(ctx, sqlLockUnique, s.schema, keys); err != nil {
			return nil, fmt.Errorf("queuemax: lock unique keys: %w", err)
		}
	}
	out := make([]store.JobID, len(jobs))
	for i := 0; i < len(jobs); {
		if jobs[i].Unique == nil {
			k := i
			for k < len(jobs) && jobs[k].Unique == nil {
				k++
			}
			ids, err := insertWith(ctx, q, plain, jobs[i:k])
			if err != nil {
				return nil, err
			}
			copy(out[i:k], ids)
			i = k
			continue
		}
		id, err := insertUniqueOne(ctx, q, unique, jobs[i])
		if err != nil {
			return nil, err
		}
		out[i] = id
		i++
	}
	return out, nil
}

// insertUniqueOne inserts one unique job, or finds the job holding its key
// and sets j.Unique.Duplicate.
func insertUniqueOne(ctx context.Context, q querier, stmt string, j store.InsertParams) (store.JobID, error) {
	u := j.Unique
	u.Duplicate = false
	states := make([]string, len(u.States))
	for i, st := range u.States {
		states[i] = string(st)
	}
	args := rowArgs(j, u.Key, states)
	for range uniqueTries {
		got, err := q.ids(ctx, stmt, args...)
		if err != nil {
			return 0, fmt.Errorf("queuemax: insert unique job: %w", err)
		}
		if len(got) == 0 {
			continue // the holder is not visible yet, or is gone: again
		}
		if got[0] < 0 {
			u.Duplicate = true
			return store.NewJobID(j.Shard, -got[0]), nil
		}
		return store.NewJobID(j.Shard, got[0]), nil
	}
	return 0, fmt.Errorf("queuemax: insert unique job: key %s: its holder stayed invisible to this transaction's snapshot", u.Key)
}
