package queuemax

import (
	"context"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// Store is where a client keeps its jobs, for Config.Store. Programs do not
// implement it: they open one, such as the PostgreSQL store of module
// github.com/queuemax/queuemax/queuemaxpg, and pass it in. Nil means the
// embedded SQLite store. docs/stores.md says how to write a store.
type Store = store.Store

// openSQLite opens the default store, the embedded SQLite one, from the
// Config fields that belong to it; shards is zero to use the count already
// in cfg.Dir (cfg.Shards for a new directory).
func openSQLite(ctx context.Context, cfg Config, shards int) (Store, error) {
	return sqlitestore.Open(ctx, sqlitestore.Options{
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
