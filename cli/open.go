package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxenv"
)

// access says what a command may do to the data directory.
type access int

const (
	// readOnly opens an existing queue with Config.ReadOnly: nothing is
	// created, migrated or changed.
	readOnly access = iota
	// readWrite opens an existing queue; a directory that does not exist
	// or holds no shard files is an error.
	readWrite
	// create opens the queue, creating the directory and shard files if
	// needed (--create).
	create
)

// config returns the Config from the environment and the global flags, and
// the log level of QUEUE_MAX_LOG_LEVEL.
func (r *runner) config() (queuemax.Config, slog.Level, error) {
	cfg, level, err := queuemaxenv.Config(r.getenv)
	if err != nil {
		return cfg, level, fmt.Errorf("environment: %w", err)
	}
	if r.dataDirSet {
		cfg.Dir = r.dataDir
	}
	if cfg.Dir == "" {
		cfg.Dir = queuemax.DefaultDir
	}
	if r.shards > 0 {
		cfg.Shards = r.shards
	}
	cfg.Handlers = r.handlers
	return cfg, level, nil
}

// postgres returns the PostgreSQL DSN and schema of --dsn and --schema,
// else of QUEUE_MAX_DSN and QUEUE_MAX_SCHEMA; an empty DSN means the data
// directory.
func (r *runner) postgres() (dsn, schema string) {
	dsn, schema = queuemaxenv.Postgres(r.getenv)
	if r.dsn != "" {
		dsn = r.dsn
	}
	if r.schema != "" {
		schema = r.schema
	}
	return dsn, schema
}

// open opens the queue for a command. hint is appended to the error for a
// missing queue (such as "pass --create to make a new queue"). adjust, if
// not nil, changes the Config before Program.Configure sees it.
func (r *runner) open(ctx context.Context, mode access, hint string, adjust func(*queuemax.Config)) (*queuemax.Client, error) {
	cfg, level, err := r.config()
	if err != nil {
		return nil, err
	}
	dsn, schema := r.postgres()
	if dsn == "" && mode != create {
		if err := checkQueueDir(cfg.Dir, hint); err != nil {
			return nil, err
		}
	}
	cfg.ReadOnly = mode == readOnly
	if r.queueMax {
		if dsn != "" {
			return nil, usagef("--queue-max-compatible is for a data directory, not PostgreSQL")
		}
		if err := checkQueueMaxLayout(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if dsn != "" {
		if r.p.OpenPostgres == nil {
			return nil, errors.New("this binary has no PostgreSQL store for --dsn or QUEUE_MAX_DSN (set Program.OpenPostgres, as the queuemax command does)")
		}
		st, err := r.p.OpenPostgres(ctx, dsn, schema, cfg.ReadOnly)
		if err != nil {
			return nil, err
		}
		// The environment's SQLite settings (DATA_DIR, NUM_SHARDS,
		// DB_BUSY_TIMEOUT, CACHE_SIZE, MMAP_SIZE) do not apply to it.
		cfg.Store, cfg.Dir, cfg.Shards, cfg.ReadOnly = st, "", 0, false
		cfg.BusyTimeout, cfg.CacheSize, cfg.MmapSize = 0, 0, 0
	}
	cfg.Logger = slog.New(slog.NewTextHandler(r.stderr, &slog.HandlerOptions{Level: level}))
	if adjust != nil {
		adjust(&cfg)
	}
	if r.p.Configure != nil {
		r.p.Configure(&cfg)
	}
	c, err := queuemax.Open(ctx, cfg)
	if err == nil && mode != readOnly && len(cfg.Handlers) > 0 {
		// A task binary knows its tasks: publish them, so that binaries
		// without a registry resolve their names even before a worker ran.
		if perr := c.PublishTasks(ctx); perr != nil {
			fmt.Fprintf(r.stderr, "warning: cannot publish the task catalogue: %v\n", perr)
		}
	}
	return c, err
}

// checkQueueMaxLayout opens cfg's data directory in the queue-max layout
// (creating it so when it is new, unless read-only) and closes it: a
// native directory is refused with the fix, and the queue opened next
// keeps the layout the directory has.
func checkQueueMaxLayout(ctx context.Context, cfg queuemax.Config) error {
	st, err := queuemax.OpenSQLite(ctx, queuemax.SQLiteOptions{Dir: cfg.Dir, Shards: cfg.Shards, DirMode: cfg.DirMode,
		FileMode: cfg.FileMode, ReadOnly: cfg.ReadOnly, BusyTimeout: cfg.BusyTimeout, CacheSize: cfg.CacheSize,
		MmapSize: cfg.MmapSize, Durability: cfg.Durability, Layout: queuemax.LayoutQueueMax})
	if err != nil {
		return err
	}
	return st.Close()
}

var shardFileRE = regexp.MustCompile(`^shard_\d+\.db$`)

// checkQueueDir fails unless dir exists and holds shard files, so that a
// mistyped path is reported instead of silently becoming an empty queue.
func checkQueueDir(dir, hint string) error {
	if hint != "" {
		hint = " (" + hint + ")"
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data dir %s does not exist%s", dir, hint)
	case err != nil:
		return fmt.Errorf("data dir: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("data dir %s is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	for _, e := range entries {
		if shardFileRE.MatchString(e.Name()) {
			return nil
		}
	}
	return fmt.Errorf("data dir %s holds no queue (no shard_N.db files)%s", dir, hint)
}

// closeClient closes c, keeping the first error.
func closeClient(c *queuemax.Client, err *error) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// where names the queue c operates on: its data dir, or PostgreSQL.
func where(c *queuemax.Client) string {
	if c.Dir() == "" {
		return "PostgreSQL"
	}
	return c.Dir()
}

// pgTarget names a PostgreSQL queue for people, without credentials:
// "PostgreSQL host:port/db, schema S".
func pgTarget(dsn, schema string) string {
	target := ""
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		target = u.Host + u.Path
	} else {
		kv := map[string]string{}
		for _, f := range strings.Fields(dsn) {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = strings.Trim(v, "'")
			}
		}
		target = kv["host"]
		if kv["port"] != "" {
			target += ":" + kv["port"]
		}
		if kv["dbname"] != "" {
			target += "/" + kv["dbname"]
		}
	}
	out := "PostgreSQL"
	if target != "" {
		out += " " + target
	}
	if schema == "" {
		schema = "queuemax"
	}
	return out + ", schema " + schema
}

// whereLong is where with a "data dir" label for a directory.
func whereLong(c *queuemax.Client) string {
	if c.Dir() == "" {
		return "PostgreSQL"
	}
	return "data dir " + c.Dir()
}

// openListing is the prologue of a read-only listing command, which takes
// the common flags and --json only: it parses args and opens the queue
// read-only. The caller closes the client.
func (r *runner) openListing(ctx context.Context, cmd *command, args []string) (c *queuemax.Client, jsonOut bool, err error) {
	fs := r.newFlagSet(cmd.name)
	j := fs.Bool("json", false, "print JSON")
	if err := r.parse(fs, cmd, args); err != nil {
		return nil, false, err
	}
	c, err = r.open(ctx, readOnly, "", nil)
	return c, *j, err
}
