package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Layout is how a data directory's shard files keep their jobs. It is
// recorded in every shard file (table qm_layout) when the directory is
// created, and changes only through MigrateLayout.
//
// Both layouts keep a job in one fila row with the same columns, so every
// statement is shared; the layouts differ in the schema objects listed in
// layoutObjects and in fila's status CHECK (setStatusCheck), which
// setLayout gives a file in one transaction, and the native layout's
// inserts write job tags themselves (insertTags).
type Layout string

const (
	// LayoutNative is the default for a new data directory: the schema is
	// queuemax's alone, and the objects that exist only so that queue-max
	// 0.2.0 can write the same files are left out of the hot path. queue-max
	// cannot start on such a directory (see layoutObjects).
	LayoutNative Layout = "native"
	// LayoutQueueMax is the layout queue-max 0.2.0 reads and writes: every
	// promise of docs/queue-max.md holds. A directory queue-max wrote (a
	// fila table and no layout record), or one queuemax created before
	// layouts were recorded, is in this layout.
	LayoutQueueMax Layout = "queue-max"
)

// ErrLayout is returned by Open when the data directory's layout is not
// the one Options.Layout asks for, or when its shard files disagree (a
// migration that did not finish).
var ErrLayout = errors.New("queuemax: data directory layout mismatch")

func (l Layout) valid() bool { return l == LayoutNative || l == LayoutQueueMax }

// sqlLayoutTable records the layout of one shard file (one row).
const sqlLayoutTable = `CREATE TABLE IF NOT EXISTS qm_layout (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	layout TEXT NOT NULL CHECK (layout IN ('native', 'queue-max')),
	updated_at TEXT NOT NULL
)`

// layoutObjects are the schema objects that exist in one layout only:
// converting a file runs the statements of the target layout (create in
// one, drop in the other), so that a file is never in between.
var layoutObjects = []struct {
	name             string
	native, queueMax []string // the statements that give the object its state in that layout
}{
	{
		// In the native layout every insert of ours that may carry tags
		// writes qm_job_tags itself (insertTags), so that an insert without
		// tags runs no trigger program at all (SQLite runs it to test its
		// WHEN: about 1.2 µs per row); the queue-max layout keeps the
		// trigger for rows queue-max copies with their tags.
		name:     "qm_job_tags_insert",
		native:   []string{`DROP TRIGGER IF EXISTS qm_job_tags_insert`},
		queueMax: []string{sqlTagsInsertTrigger},
	},
	{
		// queue-max 0.2.0 pops with status = 'pending' and no queue, which
		// no claim index of ours serves since idx_qm_ready holds the
		// default queue's jobs only (schema 19); without this index its
		// pop would read the whole table (its own idx_pop_job is dropped
		// at our every open, see migrate). It costs every job of the
		// queue-max layout one more index entry; the native layout, which
		// queue-max cannot open, goes without.
		name:     "idx_qm_pop",
		native:   []string{`DROP INDEX IF EXISTS idx_qm_pop`},
		queueMax: []string{sqlQueueMaxPopIndex},
	},
	{
		// queue-max 0.2.0 runs CREATE INDEX IF NOT EXISTS idx_pop_job
		// whenever it opens a shard file; a view of that name makes the
		// statement fail ("there is already a table named idx_pop_job"),
		// so queue-max cannot start on a native directory instead of
		// running its jobs. Nothing of ours reads the view.
		name: "idx_pop_job",
		native: []string{`DROP INDEX IF EXISTS idx_pop_job`,
			`CREATE VIEW IF NOT EXISTS idx_pop_job AS SELECT 'native layout: queue-max 0.2.0 cannot share this directory; queuemax migrate --to-queue-max moves it' AS reason`},
		queueMax: []string{`DROP VIEW IF EXISTS idx_pop_job`},
	},
}

// sqlQueueMaxPopIndex serves queue-max's pop (ORDER BY priority DESC, id
// over the pending rows), queue-max layout only.
const sqlQueueMaxPopIndex = `CREATE INDEX IF NOT EXISTS idx_qm_pop ON fila(priority DESC, id) WHERE status = 'pending'`

// sqlTagsInsertTrigger keeps qm_job_tags in step with inserted fila rows
// whoever writes them (queue-max layout).
const sqlTagsInsertTrigger = `CREATE TRIGGER IF NOT EXISTS qm_job_tags_insert AFTER INSERT ON fila
				WHEN NEW.tags IS NOT NULL
				BEGIN
					INSERT OR IGNORE INTO qm_job_tags (tag, job_id) SELECT value, NEW.id FROM json_each(NEW.tags);
				END`

// sqlInsertTags writes the tags of the rows with ids in the JSON array ?1
// (native layout: what qm_job_tags_insert does in the other).
const sqlInsertTags = `INSERT OR IGNORE INTO qm_job_tags (tag, job_id)
	SELECT t.value, f.id FROM fila f, json_each(f.tags) t
	WHERE f.id IN (SELECT value FROM json_each(?1)) AND f.tags IS NOT NULL`

// statusCheck is queue-max's CHECK on fila.status. SQLite evaluates it at
// every insert and at every update that writes status (about 25 VM steps
// per row: a tenth of a claim, an eighth of a completion); our statements
// write only these statuses, so the native layout's table has no CHECK.
const statusCheck = `CHECK (status IN ('pending','processing','failed','completed','cancelled','scheduled'))`

var (
	statusCheckRE = regexp.MustCompile(`\s*CHECK\s*\(\s*status\s+IN\s*\([^)]*\)\s*\)`)
	statusColRE   = regexp.MustCompile(`(?i)\bstatus\s+TEXT\s+NOT\s+NULL\s+DEFAULT\s+'pending'`)
)

// setStatusCheck gives fila's definition queue-max's status CHECK (want)
// or removes it, by SQLite's documented procedure for adding or removing a
// constraint that does not change what is stored: the table's text in
// sqlite_schema, under writable_schema, and the schema version bumped so
// that every connection reads it again. Adding it first checks that every
// row satisfies it.
func setStatusCheck(ctx context.Context, tx *sql.Tx, want bool) error {
	var def string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'fila'`).Scan(&def); err != nil {
		return err
	}
	if statusCheckRE.MatchString(def) == want {
		return nil
	}
	next := statusCheckRE.ReplaceAllString(def, "")
	if want {
		var bad int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM fila
			WHERE status NOT IN ('pending','processing','failed','completed','cancelled','scheduled')`).Scan(&bad); err != nil {
			return err
		}
		if bad > 0 {
			return fmt.Errorf("%d jobs have a status queue-max does not know", bad)
		}
		loc := statusColRE.FindStringIndex(def)
		if loc == nil {
			return fmt.Errorf("no status column of queue-max's shape in %q", def)
		}
		next = def[:loc[1]] + "\n\t\t" + statusCheck + def[loc[1]:]
	}
	var version int
	if err := tx.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&version); err != nil {
		return err
	}
	for _, q := range []string{`PRAGMA writable_schema = ON`,
		`UPDATE sqlite_schema SET sql = ?1 WHERE type = 'table' AND name = 'fila'`,
		fmt.Sprintf(`PRAGMA schema_version = %d`, version+1),
		`PRAGMA writable_schema = OFF`} {
		args := []any{}
		if strings.Contains(q, "?1") {
			args = append(args, next)
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// readLayout returns the layout recorded in the file behind q, or "" when
// it records none.
func readLayout(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (Layout, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'qm_layout'`).Scan(&n); err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	var l string
	err := q.QueryRowContext(ctx, `SELECT layout FROM qm_layout WHERE id = 1`).Scan(&l)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return Layout(l), err
}

// setLayout converts the file behind tx to l (its layout objects) and
// records l. The caller commits.
func setLayout(ctx context.Context, tx *sql.Tx, l Layout) error {
	for _, o := range layoutObjects {
		stmts := o.native
		if l == LayoutQueueMax {
			stmts = o.queueMax
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", o.name, err)
			}
		}
	}
	if err := setStatusCheck(ctx, tx, l == LayoutQueueMax); err != nil {
		return fmt.Errorf("fila's status CHECK: %w", err)
	}
	if l == LayoutQueueMax {
		// Rows written while the native layout left the trigger out
		// carry their tags already (insertTags); this only repairs a row
		// that lacks them.
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO qm_job_tags (tag, job_id)
			SELECT t.value, f.id FROM fila f, json_each(f.tags) t WHERE f.tags IS NOT NULL`); err != nil {
			return err
		}
	}
	return writeLayoutRecord(ctx, tx, l)
}

// probeLayout reads, before Open migrates the file behind db, whether it
// is new (no fila table) and the layout it records ("" for none: a new
// file, queue-max's, or queuemax's from before layouts were recorded).
func probeLayout(ctx context.Context, db *sql.DB) (fresh bool, recorded Layout, err error) {
	// The first statement reads the file header, so a file that is not a
	// database fails here.
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'fila'`).Scan(&n); err != nil {
		return false, "", err
	}
	recorded, err = readLayout(ctx, db)
	return n == 0, recorded, err
}

// settleLayout returns the layout of the file behind db, before Open
// migrates it: the recorded one; for a new file the wanted one (native
// unless want asks otherwise), recorded at once so that a process killed
// while creating the file leaves it in that layout; for an older file
// without a record (queue-max's, or an earlier queuemax's) the queue-max
// layout, which Open records after checking the directory.
func settleLayout(ctx context.Context, db *sql.DB, want Layout) (Layout, error) {
	fresh, recorded, err := probeLayout(ctx, db)
	if err != nil || recorded != "" {
		return recorded, err
	}
	if !fresh {
		return LayoutQueueMax, nil
	}
	l := LayoutNative
	if want == LayoutQueueMax {
		l = LayoutQueueMax
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	if err := writeLayoutRecord(ctx, tx, l); err != nil {
		return "", err
	}
	return l, tx.Commit()
}

// writeLayoutRecord records l in the file behind tx.
func writeLayoutRecord(ctx context.Context, tx *sql.Tx, l Layout) error {
	if _, err := tx.ExecContext(ctx, sqlLayoutTable); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO qm_layout (id, layout, updated_at) VALUES (1, ?1, ?2)
		ON CONFLICT (id) DO UPDATE SET layout = ?1, updated_at = ?2`, string(l), store.FormatTime(time.Now()))
	return err
}

// layoutApplied reports whether the file behind db records l and has l's
// objects: the tags trigger and fila's status CHECK in the queue-max
// layout, the idx_pop_job view in the native one.
func layoutApplied(ctx context.Context, db *sql.DB, l Layout) (bool, error) {
	recorded, err := readLayout(ctx, db)
	if err != nil || recorded != l {
		return false, err
	}
	var trigger, view int
	var def string
	if err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name = 'qm_job_tags_insert'),
		(SELECT count(*) FROM sqlite_schema WHERE type = 'view' AND name = 'idx_pop_job'),
		(SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'fila')`).Scan(&trigger, &view, &def); err != nil {
		return false, err
	}
	queueMax := l == LayoutQueueMax
	return (trigger == 1) == queueMax && (view == 1) == !queueMax && statusCheckRE.MatchString(def) == queueMax, nil
}

// recordLayout gives a file without a layout record sh.layout's objects
// and records it, in one transaction.
func (sh *shardDB) recordLayout(ctx context.Context) error {
	tx, err := sh.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := setLayout(ctx, tx, sh.layout); err != nil {
		return err
	}
	return tx.Commit()
}

// checkLayouts refuses a directory whose shard files disagree (a layout
// migration that did not finish) or whose layout is not want ("" accepts
// either).
func checkLayouts(dir string, layouts []Layout, want Layout) (Layout, error) {
	if len(layouts) == 0 {
		return want, nil
	}
	first := layouts[0]
	for _, l := range layouts {
		if l != first {
			var native, compat []string
			for j, l := range layouts {
				if l == LayoutNative {
					native = append(native, fmt.Sprint(j))
				} else {
					compat = append(compat, fmt.Sprint(j))
				}
			}
			return "", fmt.Errorf("%w: %s is half migrated (shards %s native, shards %s queue-max): run `queuemax migrate --to-native %s` or `queuemax migrate --to-queue-max %s` to finish",
				ErrLayout, dir, strings.Join(native, ","), strings.Join(compat, ","), dir, dir)
		}
	}
	if want != "" && first != want {
		fix := fmt.Sprintf("open it with --queue-max-compatible (Layout %q), or move it with `queuemax migrate --to-%s %s`", first, want, dir)
		if want == LayoutQueueMax {
			fix = fmt.Sprintf("queue-max 0.2.0 cannot share it: move it with `queuemax migrate --to-queue-max %s` first, or open it without the queue-max compatibility option", dir)
		}
		return "", fmt.Errorf("%w: %s is in the %s layout, not %s: %s", ErrLayout, dir, first, want, fix)
	}
	return first, nil
}

// Layout returns the data directory's layout.
func (s *Store) Layout() Layout { return s.layout }

// insertTags writes qm_job_tags for the rows ids just inserted with tags
// (native layout only: the queue-max layout's trigger does it).
func (sh *shardDB) insertTags(ctx context.Context, tx *sql.Tx, ids []int64) error {
	if sh.layout != LayoutNative || len(ids) == 0 || !sh.hasTags {
		return nil
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, id)
	}
	b.WriteByte(']')
	_, err := tx.ExecContext(ctx, sqlInsertTags, b.String())
	return err
}
