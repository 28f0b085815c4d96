package queuemax_test

import (
	"testing"

	"github.com/queuemax/queuemax"
)

func TestTypedWorkflowRetry_PostgreSQL(t *testing.T) {
	t.Parallel()
	testTypedWorkflowRetry(t, queuemax.PGTestConfigs(t))
}
