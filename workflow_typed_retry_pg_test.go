package queuemax_test

import (
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/pgtest"
)

func TestTypedWorkflowRetry_PostgreSQL(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	testTypedWorkflowRetry(t, queuemax.Config{DSN: dsn, Schema: pgtest.Schema(t, dsn)})
}
