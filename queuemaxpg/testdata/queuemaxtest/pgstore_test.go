package queuemaxtest_test

import (
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/queuemaxpg"
)

// queuemaxpg's TestOverlaid adds this file to queuemaxtest's tests, whose
// module does not require this one, so that their PostgreSQL cases run.
func init() {
	pgStore = func(t *testing.T) queuemax.Store {
		dsn := pgtest.DSN(t)
		st, err := queuemaxpg.Open(t.Context(), dsn, queuemaxpg.Options{Schema: pgtest.Schema(t, dsn)})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}
