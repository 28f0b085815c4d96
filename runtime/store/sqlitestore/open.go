// Package sqlitestore is the SQLite implementation of store.Store: one WAL
// database file per shard (shard_0.db …) in a data directory, using the pure-Go
// modernc.org/sqlite driver.
//
// Each shard has one writer connection (SQLite allows one writer at a time;
// more connections would only queue on the file lock) that every write goes
// through, grouped into shared transactions by a committer, and a small pool
// of reader connections for listings and stats.
//
// Not API: import github.com/queuemax/queuemax instead.
package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax/runtime/shard"
	"github.com/queuemax/queuemax/runtime/store"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Options configures Open. Zero values mean the defaults noted.
type Options struct {
	Dir string // required
	// Shards is the shard count, 1–1024. Zero means the count of the
	// (complete) directory, or DefaultShards for a new one; it is read
	// under the creation lock, so processes creating one directory at once
	// agree on it.
	Shards        int
	DefaultShards int           // zero: 6
	DirMode       os.FileMode   // a new data directory's mode; zero: 0700
	FileMode      os.FileMode   // a new shard file's mode; zero: 0600
	BusyTimeout   time.Duration // zero: 30s
	CacheSize     int           // pages; zero: 10000
	MmapSize      int64         // bytes; zero: no mmap
	FullSync      bool          // synchronous=FULL instead of NORMAL
	// ReadOnly opens existing shard files without creating the directory,
	// files or running migrations (for inspection tools).
	ReadOnly bool
	// Layout is the layout the directory must be in: "" accepts the one
	// it has and creates a new directory in LayoutNative; LayoutQueueMax
	// creates a new one in that layout (queue-max 0.2.0 may then share it)
	// and refuses a native one; LayoutNative refuses a queue-max one. A
	// refusal wraps ErrLayout and names the fix.
	Layout Layout
}

// Store is the SQLite store. Create it with Open.
type Store struct {
	shards   []*shardDB
	closed   atomic.Bool
	readOnly bool
	layout   Layout
}

var (
	_ store.Store = (*Store)(nil)
)

type shardDB struct {
	idx    int
	path   string
	w      *sql.DB // writer: exactly one connection, BEGIN IMMEDIATE
	r      *sql.DB // readers
	commit committer
	stmts  stmts
	// full remembers that the last claim filled its batch, so the next
	// claim can skip the read-only probe for work (see Claim); named is
	// the last probe's answer to whether named queues had pending jobs,
	// and probed when that probe ran (Unix nanoseconds).
	full, named atomic.Bool
	probed      atomic.Int64
	// cols is jobColumns as this file can answer it, and dlqCols the
	// dead-letter listing's columns: a queue-max file opened read-only
	// (not migrated) lacks our columns, which read as NULL.
	cols, dlqCols string
	taskCol       string // "task", or "NULL" in such a file
	hasTags       bool   // the file has the tags column and qm_job_tags
	noQueue       bool   // such a file: no queue column, none of our claim indexes (forFile)
	dlqTaskCol    string
	wf            wfStmts // workflow.go
	// layout is the file's layout (layout.go); record says Open must
	// write it, the file having none yet.
	layout Layout
	record bool
}

// dlqColumns is the column list DeadLetters reads, in order.
const dlqColumns = `id, original_job_id, task, payload, error, error_type, attempts, failed_at`

// readColumns fills sh's column lists from the columns the file has.
func (sh *shardDB) readColumns(ctx context.Context) error {
	have := func(table string) (map[string]bool, error) {
		rows, err := sh.r.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		m := make(map[string]bool)
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return nil, err
			}
			m[n] = true
		}
		return m, rows.Err()
	}
	list := func(cols string, m map[string]bool) string {
		parts := strings.Split(cols, ",")
		for i, c := range parts {
			if c = strings.TrimSpace(c); !m[c] {
				parts[i] = " NULL AS " + c
			}
		}
		return strings.Join(parts, ",")
	}
	fila, err := have("fila")
	if err != nil {
		return err
	}
	dlq, err := have("dead_letter_queue")
	if err != nil {
		return err
	}
	sh.cols, sh.dlqCols = readColumnsOf(fila), list(dlqColumns, dlq)
	sh.taskCol, sh.dlqTaskCol = "task", "task"
	if !fila["task"] {
		sh.taskCol = "NULL"
	}
	sh.hasTags = fila["tags"]
	sh.noQueue = !fila["queue"]
	if !dlq["task"] {
		sh.dlqTaskCol = "NULL"
	}
	return nil
}

var shardFileRE = regexp.MustCompile(`^shard_(\d+)\.db$`)

// Open opens or creates the shard files in o.Dir and migrates them.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Shards < 0 || o.Shards > shard.MaxShards {
		return nil, fmt.Errorf("queuemax: shards %d out of range (want 1–%d)", o.Shards, shard.MaxShards)
	}
	if o.DefaultShards == 0 {
		o.DefaultShards = 6
	}
	if o.DirMode == 0 {
		o.DirMode = 0o700
	}
	if o.FileMode == 0 {
		o.FileMode = 0o600
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 30 * time.Second
	}
	if o.CacheSize == 0 {
		o.CacheSize = 10000
	}
	if o.Layout != "" && !o.Layout.valid() {
		return nil, fmt.Errorf("queuemax: layout %q (want %q or %q)", o.Layout, LayoutNative, LayoutQueueMax)
	}
	if o.ReadOnly {
		if fi, err := os.Stat(o.Dir); err != nil {
			return nil, fmt.Errorf("queuemax: data dir: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("queuemax: data dir %s is not a directory", o.Dir)
		}
	} else {
		if err := os.MkdirAll(o.Dir, o.DirMode); err != nil {
			return nil, fmt.Errorf("queuemax: create data dir: %w", err)
		}
		// Creating shard files and reading the count happen under one
		// lock, so two processes opening a new directory at once agree.
		unlock, err := lockDir(o.Dir, o.FileMode)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if o.Shards == 0 {
		n, err := CountShards(o.Dir)
		if err != nil {
			return nil, err
		}
		o.Shards = cmp.Or(n, o.DefaultShards)
	}
	if err := checkShardCount(o.Dir, o.Shards, o.ReadOnly); err != nil {
		return nil, err
	}
	s := &Store{readOnly: o.ReadOnly}
	for i := range o.Shards {
		sh, err := openShard(ctx, o, i)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.shards = append(s.shards, sh)
	}
	layouts := make([]Layout, len(s.shards))
	for i, sh := range s.shards {
		layouts[i] = sh.layout
	}
	var err error
	if s.layout, err = checkLayouts(o.Dir, layouts, o.Layout); err != nil {
		s.Close()
		return nil, err
	}
	for _, sh := range s.shards {
		if sh.record {
			if err := sh.recordLayout(ctx); err != nil {
				s.Close()
				return nil, fmt.Errorf("queuemax: shard %d (%s): record its layout: %w", sh.idx, sh.path, err)
			}
		}
	}
	if !o.ReadOnly {
		// Settle multi-shard batches a dead producer left staged.
		if _, _, err := s.finishBatches(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// CountShards returns how many shard files dir holds (0 if none, or if dir
// does not exist).
func CountShards(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queuemax: read data dir: %w", err)
	}
	n := 0
	for _, e := range entries {
		if shardFileRE.MatchString(e.Name()) {
			n++
		}
	}
	return n, nil
}

// checkShardCount refuses a directory whose shard files do not match n: a
// different count would strand jobs in unused files and change routing.
func checkShardCount(dir string, n int, readOnly bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("queuemax: read data dir: %w", err)
	}
	var found []int
	for _, e := range entries {
		if m := shardFileRE.FindStringSubmatch(e.Name()); m != nil {
			i, _ := strconv.Atoi(m[1])
			found = append(found, i)
		}
	}
	if len(found) == 0 {
		if readOnly {
			return fmt.Errorf("queuemax: data dir %s holds no shard files", dir)
		}
		return nil
	}
	slices.Sort(found)
	if len(found) != n || found[len(found)-1] != n-1 {
		for i := range found[len(found)-1] {
			if !slices.Contains(found, i) {
				return fmt.Errorf("%w: %s: shard_%d.db is missing while other shards hold data",
					store.ErrShardMismatch, dir, i)
			}
		}
		return fmt.Errorf("%w: %s holds %d shard files (shard_%d.db is the last), config says %d",
			store.ErrShardMismatch, dir, len(found), found[len(found)-1], n)
	}
	// A zero-length file would open as a silently empty shard.
	var empty []int
	for _, i := range found {
		fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("shard_%d.db", i)))
		if err != nil {
			return fmt.Errorf("queuemax: data dir: %w", err)
		}
		if fi.Size() == 0 {
			empty = append(empty, i)
		}
	}
	if len(empty) > 0 && len(empty) < len(found) {
		return fmt.Errorf("%w: %s: shard_%d.db is empty while other shards hold data",
			store.ErrNotDatabase, dir, empty[0])
	}
	return nil
}

func dsn(path string, o Options, readOnly bool) string {
	q := url.Values{}
	sync := "NORMAL"
	if o.FullSync {
		sync = "FULL"
	}
	pragmas := []string{
		fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()),
		"journal_mode(WAL)",
		"synchronous(" + sync + ")",
		fmt.Sprintf("cache_size(%d)", o.CacheSize),
		fmt.Sprintf("mmap_size(%d)", o.MmapSize),
		"temp_store(MEMORY)",
		"foreign_keys(ON)",
		// Workflow steps cascade through triggers (workflow_schema.go).
		"recursive_triggers(ON)",
	}
	if readOnly {
		pragmas = append(pragmas, "query_only(1)")
	}
	if readOnly && o.ReadOnly {
		// Do not try to switch the journal mode of a file we may not
		// write (a WAL file stays WAL).
		pragmas = slices.DeleteFunc(pragmas, func(p string) bool { return strings.HasPrefix(p, "journal_mode") })
		q.Set("mode", "ro")
	}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if !readOnly {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

func openShard(ctx context.Context, o Options, i int) (*shardDB, error) {
	path := filepath.Join(o.Dir, fmt.Sprintf("shard_%d.db", i))
	sh := &shardDB{idx: i, path: path}
	wrap := func(op string, err error) error {
		var se *sqlite.Error
		if errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_NOTADB || se.Code() == sqlite3.SQLITE_CORRUPT) {
			return fmt.Errorf("%w: %s: %v", store.ErrNotDatabase, path, err)
		}
		return fmt.Errorf("queuemax: shard %d (%s): %s: %w", i, path, op, err)
	}
	if o.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("queuemax: shard %d: %w", i, err)
		}
	}
	var err error
	if !o.ReadOnly {
		// Create the file with its mode: SQLite would use 0644, and gives
		// the -wal and -shm files the database file's mode.
		if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, o.FileMode); err != nil {
			return nil, wrap("create", err)
		} else {
			f.Close()
		}
		sh.w, err = sql.Open("sqlite", dsn(path, o, false))
		if err != nil {
			return nil, wrap("open", err)
		}
		sh.w.SetMaxOpenConns(1)
		sh.w.SetMaxIdleConns(1)
		sh.w.SetConnMaxLifetime(0)
		sh.w.SetConnMaxIdleTime(0)
		if sh.layout, err = settleLayout(ctx, sh.w, o.Layout); err != nil {
			sh.close()
			return nil, wrap("read", err)
		}
		if err := migrate(ctx, sh.w, i, sh.layout); err != nil {
			sh.close()
			return nil, wrap("migrate", err)
		}
		// A file whose record is missing (queue-max's, an earlier
		// queuemax's) or whose objects are not its layout's yet (a new
		// file, or a process killed while creating it) gets them once
		// the directory's layouts are checked.
		applied, err := layoutApplied(ctx, sh.w, sh.layout)
		if err != nil {
			sh.close()
			return nil, wrap("read", err)
		}
		sh.record = !applied
	}
	sh.r, err = sql.Open("sqlite", dsn(path, o, true))
	if err != nil {
		sh.close()
		return nil, wrap("open", err)
	}
	sh.r.SetMaxOpenConns(4)
	sh.r.SetMaxIdleConns(4)
	if o.ReadOnly {
		if err := checkReadable(ctx, sh.r); err != nil {
			// Without write access to the directory (a read-only file
			// system) SQLite cannot create the WAL index; nobody can write
			// there either, so the file can be read as immutable.
			sh.r.Close()
			var oerr error
			if sh.r, oerr = sql.Open("sqlite", dsn(path, o, true)+"&immutable=1"); oerr != nil {
				return nil, wrap("open", oerr)
			}
			sh.r.SetMaxOpenConns(4)
			if err2 := checkReadable(ctx, sh.r); err2 != nil {
				sh.close()
				// The immutable read says what the file is (not a
				// database); the first error only that its WAL failed.
				return nil, wrap("read", err2)
			}
		}
	}
	if o.ReadOnly {
		if sh.layout, err = readLayout(ctx, sh.r); err != nil {
			sh.close()
			return nil, wrap("read", err)
		}
		sh.layout = cmp.Or(sh.layout, LayoutQueueMax)
	}
	if err := sh.readColumns(ctx); err != nil {
		sh.close()
		return nil, wrap("read", err)
	}
	if !o.ReadOnly {
		if err := sh.stmts.prepare(ctx, sh.w); err != nil {
			sh.close()
			return nil, wrap("prepare", err)
		}
		if err := sh.stmts.prepareReader(ctx, sh.r); err != nil {
			sh.close()
			return nil, wrap("prepare", err)
		}
	}
	sh.commit.db = sh.w
	sh.commit.shard = i
	sh.commit.stmts = &sh.stmts
	return sh, nil
}

func checkReadable(ctx context.Context, db *sql.DB) error {
	var n int
	return db.QueryRowContext(ctx, `SELECT count(*) FROM fila WHERE 0`).Scan(&n)
}

func (sh *shardDB) close() error {
	var errs []error
	sh.stmts.close()
	sh.wf.close()
	if sh.r != nil {
		errs = append(errs, sh.r.Close())
	}
	if sh.w != nil {
		errs = append(errs, sh.w.Close())
	}
	return errors.Join(errs...)
}

// Shards returns the number of shards.
func (s *Store) Shards() int { return len(s.shards) }

// ReadOnly reports whether the store was opened with Options.ReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Close closes every shard. It is safe to call more than once.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, sh := range s.shards {
		errs = append(errs, sh.close())
	}
	return errors.Join(errs...)
}

func (s *Store) shard(i int) (*shardDB, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if i < 0 || i >= len(s.shards) {
		return nil, fmt.Errorf("%w: %d (valid: 0–%d)", store.ErrInvalidShard, i, len(s.shards)-1)
	}
	return s.shards[i], nil
}

// shardList returns one shard, or every shard for store.AllShards.
func (s *Store) shardList(i int) ([]*shardDB, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if i == store.AllShards {
		return s.shards, nil
	}
	sh, err := s.shard(i)
	if err != nil {
		return nil, err
	}
	return []*shardDB{sh}, nil
}

func randomOrder(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	rand.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}
