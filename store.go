package queuemax

import (
	"context"
	"os"
	"time"

	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// openSQLite opens the default store, the embedded SQLite one, from the
// Config fields that belong to it; shards is zero to use the count already
// in cfg.Dir (cfg.Shards for a new directory).
func openSQLite(ctx context.Context, cfg Config, shards int) (Store, error) {
	return openSQLiteLayout(ctx, cfg, shards, "")
}

func openSQLiteLayout(ctx context.Context, cfg Config, shards int, layout SQLiteLayout) (Store, error) {
	return sqlitestore.Open(ctx, sqlitestore.Options{
		Layout:        layout,
		Dir:           cfg.Dir,
		Shards:        shards,
		DefaultShards: cfg.Shards,
		DirMode:       cfg.DirMode,
		FileMode:      cfg.FileMode,
		BusyTimeout:   cfg.BusyTimeout,
		CacheSize:     cfg.CacheSize,
		MmapSize:      cfg.MmapSize,
		FullSync:      cfg.Durability == DurabilityFull,
		ReadOnly:      cfg.ReadOnly,
	})
}

// SQLiteLayout is how a SQLite data directory keeps its jobs, recorded in
// the directory when it is created: LayoutNative (the default for a new
// directory) or LayoutQueueMax, which queue-max 0.2.0 can share. An
// existing directory keeps its layout; `queuemax migrate` moves it to the
// other. docs/queue-max.md says what each promises.
type SQLiteLayout = sqlitestore.Layout

const (
	// LayoutNative is queuemax's own schema, with nothing on the hot path
	// that exists only for queue-max. queue-max must not open such a
	// directory.
	LayoutNative = sqlitestore.LayoutNative
	// LayoutQueueMax keeps the files readable and writable by queue-max
	// 0.2.0 at the same time as by queuemax. A directory queue-max wrote,
	// or one an earlier queuemax created, is in this layout.
	LayoutQueueMax = sqlitestore.LayoutQueueMax
)

// ErrLayoutMismatch is returned by OpenSQLite when the data directory is
// not in the layout SQLiteOptions.Layout asks for, or when its shard files
// disagree (a `queuemax migrate` that did not finish). The error names the
// directory, its layout and the fix.
var ErrLayoutMismatch = sqlitestore.ErrLayout

// SQLiteOptions configures OpenSQLite. The fields are Config's fields of
// the same names, with the same defaults, and Layout.
type SQLiteOptions struct {
	Dir         string
	Shards      int
	DirMode     os.FileMode
	FileMode    os.FileMode
	ReadOnly    bool
	BusyTimeout time.Duration
	CacheSize   int
	MmapSize    int64
	Durability  Durability
	// Layout is the layout the directory must be in. Empty accepts the
	// one an existing directory has and creates a new one native;
	// LayoutQueueMax creates a new directory that queue-max 0.2.0 can
	// share and refuses a native one (ErrLayoutMismatch); LayoutNative
	// refuses a queue-max one.
	Layout SQLiteLayout
}

// OpenSQLite opens (creating if needed) the embedded SQLite store for
// Config.Store, as Open does with a nil Config.Store, with a layout
// expectation. To share a new data directory with queue-max 0.2.0:
//
//	st, err := queuemax.OpenSQLite(ctx, queuemax.SQLiteOptions{Dir: "data", Layout: queuemax.LayoutQueueMax})
//	...
//	c, err := queuemax.Open(ctx, queuemax.Config{Store: st, Handlers: Handlers()})
func OpenSQLite(ctx context.Context, o SQLiteOptions) (Store, error) {
	cfg := Config{Dir: o.Dir, Shards: o.Shards, DirMode: o.DirMode, FileMode: o.FileMode, ReadOnly: o.ReadOnly,
		BusyTimeout: o.BusyTimeout, CacheSize: o.CacheSize, MmapSize: o.MmapSize, Durability: o.Durability}
	shards := o.Shards
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return openSQLiteLayout(ctx, cfg, shards, o.Layout)
}

// checkStoreFields refuses, when Config.Store is set, the fields that
// configure the default SQLite store: they would silently do nothing.
func (c Config) checkStoreFields() error {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"Dir", c.Dir != ""},
		{"Shards", c.Shards != 0},
		{"DirMode", c.DirMode != 0},
		{"FileMode", c.FileMode != 0},
		{"ReadOnly", c.ReadOnly},
		{"BusyTimeout", c.BusyTimeout != 0},
		{"CacheSize", c.CacheSize != 0},
		{"MmapSize", c.MmapSize != 0},
		{"Durability", c.Durability != DurabilityNormal},
	} {
		if f.set {
			return &ConfigError{f.name, "configures the default SQLite store, not Config.Store (set it in that store's options)"}
		}
	}
	return nil
}
