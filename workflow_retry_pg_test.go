package queuemax

import "testing"

// PostgreSQL runs of workflow_retry_test.go's bodies.

func pgOpener(t *testing.T) wfOpener {
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	return func(t *testing.T, cfg Config) *testBundle {
		cfg.Store = &pgTarget{dsn: dsn, schema: schema}
		return setup(t, cfg)
	}
}

func TestWorkflowRetry_PostgreSQL(t *testing.T) {
	t.Parallel()
	testWorkflowRetry(t, pgOpener(t))
}

func TestWorkflowRetryJob_PostgreSQL(t *testing.T) {
	t.Parallel()
	testWorkflowRetryJob(t, pgOpener(t))
}

func TestWorkflowEndsOnce_PostgreSQL(t *testing.T) {
	t.Parallel()
	testWorkflowEndsOnce(t, pgOpener(t))
}
