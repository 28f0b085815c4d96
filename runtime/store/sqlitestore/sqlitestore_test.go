package sqlitestore_test

import (
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, shards int) store.Store {
		st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: t.TempDir(), Shards: shards})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return st
	})
}
