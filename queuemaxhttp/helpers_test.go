package queuemaxhttp

import (
	"context"
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
)

// testBundle is an open client on a fresh directory.
type testBundle struct {
	c   *queuemax.Client
	ctx context.Context
}

// setup opens cfg with queuemaxtest.NewClient (a fresh directory, warnings
// in the test log, closed by t.Cleanup).
func setup(t *testing.T, cfg queuemax.Config) *testBundle {
	t.Helper()
	return &testBundle{c: queuemaxtest.NewClient(t, cfg), ctx: t.Context()}
}

// run starts c.Run until the returned stop (or the test's end).
func run(t *testing.T, c *queuemax.Client) (stop func()) {
	t.Helper()
	return queuemaxtest.Run(t, c)
}
