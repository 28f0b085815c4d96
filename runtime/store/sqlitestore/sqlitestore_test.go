package sqlitestore_test

import (
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

// TestConformance runs the store contract's suite on both layouts: a new
// directory's (native) and the one queue-max 0.2.0 shares.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, layout := range []sqlitestore.Layout{sqlitestore.LayoutNative, sqlitestore.LayoutQueueMax} {
		t.Run(string(layout), func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T, shards int) store.Store {
				st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: shards, Layout: layout})
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if st.Layout() != layout {
					t.Fatalf("Layout() = %q, want %q", st.Layout(), layout)
				}
				return st
			})
		})
	}
}
