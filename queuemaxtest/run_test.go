package queuemaxtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
)

// TestRun: Run's workers run jobs until stop, after which Run has returned
// and a job enqueued later stays pending.
func TestRun(t *testing.T) {
	t.Parallel()
	c := queuemaxtest.NewClient(t, queuemax.Config{Shards: 1, Handlers: []queuemax.Handler{
		{Name: "t.ok", Func: func(context.Context, *queuemax.Job) (any, error) { return nil, nil }}}})
	done, cancel := c.Subscribe(queuemax.EventCompleted)
	defer cancel()
	stop := queuemaxtest.Run(t, c)
	id, err := c.Enqueue(t.Context(), "t.ok", map[string]int{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-done:
		if e.JobID != id {
			t.Errorf("completed %d, want %d", e.JobID, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not run within 30s")
	}
	stop()
	later, err := c.Enqueue(t.Context(), "t.ok", map[string]int{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := c.Job(t.Context(), later); err != nil || j.Status != queuemax.StatusPending {
		t.Errorf("job enqueued after stop = %+v, %v; want pending", j, err)
	}
}
