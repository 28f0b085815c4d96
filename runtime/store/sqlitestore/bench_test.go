package sqlitestore_test

import (
	"testing"

	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

func BenchmarkClaimQueues(b *testing.B) {
	storetest.BenchmarkClaimQueues(b, func(b *testing.B) store.Store {
		st, err := sqlitestore.Open(b.Context(), sqlitestore.Options{Dir: b.TempDir(), Shards: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	})
}
