package queuemax

import (
	"context"
	"errors"
	"testing"
	"time"
)

// cancelBackends opens a worker client and a second client (another
// "process": its own connections, no shared engine) on the same queue, for
// SQLite and, when it is reachable, PostgreSQL.
func cancelBackends(t *testing.T, handlers []Handler, fn func(t *testing.T, worker, other *testBundle)) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		w := setup(t, Config{Dir: dir, Shards: 2, Handlers: handlers, HeartbeatInterval: 50 * time.Millisecond})
		o := setup(t, Config{Dir: dir, Shards: 2})
		fn(t, w, o)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		dsn := pgTestDSN(t)
		schema := pgTestSchema(t, dsn)
		w := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}, Handlers: handlers, HeartbeatInterval: 50 * time.Millisecond})
		o := setup(t, Config{Store: &pgTarget{dsn: dsn, schema: schema}})
		fn(t, w, o)
	})
}

func waitStatus(t *testing.T, c *Client, id JobID, want Status) *Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, err := c.Job(t.Context(), id)
		if err == nil && j.Status == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: %v, %v; want status %s", id, j, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClient_Cancel(t *testing.T) {
	t.Parallel()
	started := make(chan JobID, 10)
	causes := make(chan error, 10)
	block := Handler{Name: "t.Block", Options: TaskOptions{MaxRetries: Ptr(5)}, Func: func(ctx context.Context, j *Job) (any, error) {
		started <- j.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}}
	self := Define("t.Self", TaskOptions{MaxRetries: Ptr(5)}, func(context.Context, struct{}) error {
		return Cancel(errors.New("nothing to do"))
	})
	cancelBackends(t, []Handler{block, self}, func(t *testing.T, w, o *testBundle) {
		ctx := t.Context()
		evs := collect(o.c, EventCancelled)
		wevs := collect(w.c, EventCancelled, EventRetried, EventFailed)

		// A waiting job is cancelled at once and never runs.
		waiting, err := o.c.Enqueue(ctx, "t.Block", struct{}{}, Opts{RunAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := o.c.Cancel(ctx, waiting); err != nil || st != StatusCancelled {
			t.Fatalf("Cancel(scheduled) = %q, %v; want cancelled", st, err)
		}
		if e := waitEvents(t, evs, 1)[0]; e.JobID != waiting {
			t.Errorf("job_cancelled for %d, want %d", e.JobID, waiting)
		}
		if _, err := o.c.Cancel(ctx, waiting); !errors.Is(err, ErrJobFinished) {
			t.Errorf("second Cancel = %v; want ErrJobFinished", err)
		}
		if _, err := o.c.Cancel(ctx, JobID(1<<40)); !errors.Is(err, ErrJobNotFound) {
			t.Errorf("Cancel(unknown) = %v; want ErrJobNotFound", err)
		}

		stop := run(t, w.c)
		defer stop()
		// A running job, cancelled from another client: its handler's
		// context ends with ErrJobCancelled and the job ends cancelled.
		id, err := o.c.Enqueue(ctx, "t.Block", struct{}{}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		if got := <-started; got != id {
			t.Fatalf("started %d, want %d", got, id)
		}
		if st, err := o.c.Cancel(ctx, id); err != nil || st != StatusProcessing {
			t.Fatalf("Cancel(running) = %q, %v; want processing", st, err)
		}
		select {
		case cause := <-causes:
			if !errors.Is(cause, ErrJobCancelled) {
				t.Errorf("handler context cause = %v; want ErrJobCancelled", cause)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("handler context not cancelled")
		}
		j := waitStatus(t, o.c, id, StatusCancelled)
		if j.Attempts != 1 || j.CompletedAt.IsZero() {
			t.Errorf("cancelled job: attempts %d, completed_at %v; want 1 attempt, finished", j.Attempts, j.CompletedAt)
		}
		if e := waitEvents(t, wevs, 1)[0]; e.Kind != EventCancelled || e.JobID != id {
			t.Errorf("worker event = %+v; want job_cancelled for %d", e, id)
		}

		// A handler that returns Cancel(err) ends its job cancelled.
		sid, err := o.c.Enqueue(ctx, "t.Self", struct{}{}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		j = waitStatus(t, o.c, sid, StatusCancelled)
		if j.Attempts != 1 || j.LastError != "nothing to do" {
			t.Errorf("self-cancelled job: attempts %d, error %q; want 1, nothing to do", j.Attempts, j.LastError)
		}
		if e := waitEvents(t, wevs, 1)[0]; e.Kind != EventCancelled || e.JobID != sid {
			t.Errorf("worker event = %+v; want job_cancelled for %d", e, sid)
		}
		if dl, err := o.c.DeadLetters(ctx, ListParams{}); err != nil || len(dl) != 0 {
			t.Errorf("dead letters = %d, %v; want none", len(dl), err)
		}
	})
}
