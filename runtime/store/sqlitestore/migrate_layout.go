package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// MigrateResult says what MigrateLayout did.
type MigrateResult struct {
	// Converted lists the shards moved to the layout by this call, Already
	// those that were in it (a directory in the layout already, or the
	// shards an interrupted run had finished).
	Converted, Already []int
}

// migrateHook, when set (tests only), runs at each step of a shard's move:
// "begin" after its transaction started, "commit" just before it commits.
type migrateHook func(shard int, step string)

// MigrateLayout moves the data directory o.Dir to layout to, one shard
// file at a time. Each file moves in one transaction (its layout objects
// and its layout record together), so a file is in one layout or the
// other, never in between; jobs keep their rows, IDs, dead-letter entries,
// workflows and metadata. A run that is killed leaves the files it
// finished in the new layout and the rest in the old one: Open refuses
// such a directory, naming it half migrated, and running MigrateLayout
// again finishes it. Only o.Dir, o.BusyTimeout, o.CacheSize, o.MmapSize and
// o.FullSync are used.
//
// Every process using the directory must be stopped first: a process
// that opened it keeps the statements of the layout it found. A worker
// registered as live in the directory makes MigrateLayout fail.
func MigrateLayout(ctx context.Context, o Options, to Layout) (MigrateResult, error) {
	return migrateLayout(ctx, o, to, nil)
}

func migrateLayout(ctx context.Context, o Options, to Layout, hook migrateHook) (res MigrateResult, err error) {
	if !to.valid() {
		return res, fmt.Errorf("queuemax: layout %q (want %q or %q)", to, LayoutNative, LayoutQueueMax)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 30 * time.Second
	}
	if o.CacheSize == 0 {
		o.CacheSize = 10000
	}
	if o.FileMode == 0 {
		o.FileMode = 0o600
	}
	n, err := CountShards(o.Dir)
	if err != nil {
		return res, err
	}
	if n == 0 {
		return res, fmt.Errorf("queuemax: data dir %s holds no shard files", o.Dir)
	}
	if err := checkShardCount(o.Dir, n, true); err != nil {
		return res, err
	}
	// No Open creates or checks files while the layout moves.
	unlock, err := lockDir(o.Dir, o.FileMode)
	if err != nil {
		return res, err
	}
	defer unlock()
	if err := checkNoLiveWorkers(ctx, o); err != nil {
		return res, err
	}
	for i := range n {
		moved, err := migrateShard(ctx, o, i, to, hook)
		if err != nil {
			return res, fmt.Errorf("queuemax: shard %d of %s: move to the %s layout: %w", i, o.Dir, to, err)
		}
		if moved {
			res.Converted = append(res.Converted, i)
		} else {
			res.Already = append(res.Already, i)
		}
	}
	return res, nil
}

// migrateShard moves shard i to layout to in one transaction, after
// bringing its schema up to date; it reports false for a file in to
// already.
func migrateShard(ctx context.Context, o Options, i int, to Layout, hook migrateHook) (bool, error) {
	path := filepath.Join(o.Dir, fmt.Sprintf("shard_%d.db", i))
	db, err := sql.Open("sqlite", dsn(path, o, false))
	if err != nil {
		return false, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	fresh, recorded, err := probeLayout(ctx, db)
	if err != nil {
		return false, err
	}
	if fresh {
		return false, errors.New("the file holds no queue")
	}
	if applied, err := layoutApplied(ctx, db, to); err != nil || applied {
		return false, err
	}
	// A file without a record is in the queue-max layout (layout.go).
	if err := migrate(ctx, db, i, cmpLayout(recorded)); err != nil {
		return false, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if hook != nil {
		hook(i, "begin")
	}
	if err := setLayout(ctx, tx, to); err != nil {
		return false, err
	}
	if hook != nil {
		hook(i, "commit")
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return true, nil
}

func cmpLayout(l Layout) Layout {
	if l == "" {
		return LayoutQueueMax
	}
	return l
}

// checkNoLiveWorkers fails when shard 0 registers a worker whose entry has
// not expired: a process that runs jobs in the directory.
func checkNoLiveWorkers(ctx context.Context, o Options) error {
	db, err := sql.Open("sqlite", dsn(filepath.Join(o.Dir, "shard_0.db"), o, true))
	if err != nil {
		return err
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'qm_workers'`).Scan(&tables); err != nil {
		return err
	}
	if tables == 0 {
		return nil
	}
	var live int
	var id sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT count(*), min(id) FROM qm_workers WHERE expires_at > ?`,
		store.FormatTime(time.Now())).Scan(&live, &id); err != nil {
		return err
	}
	if live > 0 {
		return fmt.Errorf("queuemax: data dir %s has %d live worker(s) (%s…): stop every process using it before moving its layout", o.Dir, live, id.String)
	}
	return nil
}
