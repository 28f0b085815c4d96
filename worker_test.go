package queuemax

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

type echoArgs struct {
	N int `json:"n"`
}

// collect collects events of some kinds on a channel, through Subscribe
// (its goroutine ends when the client closes).
func collect(c *Client, kinds ...EventKind) <-chan Event {
	return onEvents(c, kinds...)
}

// onEvents forwards c's events of kinds to the returned channel until c
// closes.
func onEvents(c *Client, kinds ...EventKind) <-chan Event {
	sub, _ := c.SubscribeConfig(&SubscribeConfig{ChanSize: 10000, Kinds: kinds})
	ch := make(chan Event, 10000)
	go func() {
		for e := range sub {
			ch <- *e
		}
	}()
	return ch
}

func waitEvents(t *testing.T, ch <-chan Event, n int) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case e := <-ch:
			out = append(out, e)
		case <-timeout:
			t.Fatalf("got %d events, want %d: %+v", len(out), n, out)
		}
	}
	return out
}

type httpErr struct{ code int }

func (e httpErr) Error() string   { return fmt.Sprintf("http %d", e.code) }
func (e httpErr) StatusCode() int { return e.code }

func TestClient_Run(t *testing.T) {
	t.Parallel()

	t.Run("ProcessesTypedJobsAndStoresResults", func(t *testing.T) {
		t.Parallel()
		var sum atomic.Int64
		add := Define("t.Add", TaskOptions{}, func(_ context.Context, a echoArgs) error { sum.Add(int64(a.N)); return nil })
		dbl := DefineResult("t.Double", TaskOptions{}, func(_ context.Context, a echoArgs) (echoArgs, error) { return echoArgs{a.N * 2}, nil })
		b := setup(t, Config{Shards: 3, Handlers: []Handler{add, dbl}})
		done := collect(b.c, EventCompleted)
		stop := run(t, b.c)
		addT := NewTask[echoArgs](b.c, "t.Add", TaskOptions{})
		var args []echoArgs
		for i := 1; i <= 100; i++ {
			args = append(args, echoArgs{i})
		}
		if _, err := addT.EnqueueMany(b.ctx, args); err != nil {
			t.Fatal(err)
		}
		id, err := NewTask[echoArgs](b.c, "t.Double", TaskOptions{}).Enqueue(b.ctx, echoArgs{21})
		if err != nil {
			t.Fatal(err)
		}
		waitEvents(t, done, 101)
		if got := sum.Load(); got != 5050 {
			t.Errorf("sum = %d, want 5050", got)
		}
		res, err := Result[echoArgs](b.ctx, b.c, id)
		if err != nil || res.N != 42 {
			t.Errorf("Result = %v, %v; want 42", res, err)
		}
		stop()
		s, _ := b.c.Stats(b.ctx)
		// Every completed job is kept (CompletedRetention), not only the
		// one with a result.
		if s.TotalProcessed != 101 || s.Pending != 0 || s.Completed != 101 {
			t.Errorf("stats processed=%d pending=%d completed=%d, want 101, 0, 101", s.TotalProcessed, s.Pending, s.Completed)
		}
		ws, _ := b.c.WorkerStats()
		if ws.Processed != 101 || ws.State != WorkerStopped {
			t.Errorf("worker stats = %+v, want 101 processed and stopped", ws)
		}
	})

	t.Run("LeaseLostCompletionRejected", func(t *testing.T) {
		t.Parallel()
		started, release := make(chan struct{}), make(chan struct{})
		h := DefineResult("t.Lost", TaskOptions{}, func(ctx context.Context, _ echoArgs) (string, error) {
			close(started)
			<-release
			return "stale", nil
		})
		b := setup(t, Config{Shards: 1, Handlers: []Handler{h}})
		stop := run(t, b.c)
		id, _ := b.c.Enqueue(b.ctx, "t.Lost", echoArgs{}, Opts{})
		<-started
		// Another worker takes the job over (as after a stuck timeout and
		// a new claim), in one statement so that Run cannot re-claim it in
		// between.
		queueMaxWrite(t, b.dir, 0, `UPDATE fila SET lease = lease + 1, worker_id = 'other' WHERE status = 'processing'`)
		j, err := b.c.Job(b.ctx, id)
		if err != nil || j.WorkerID != "other" {
			t.Fatalf("job after takeover = %+v, %v", j, err)
		}
		other := []*Job{j}
		close(release)
		stop()
		ws, _ := b.c.WorkerStats()
		if ws.LeaseLost != 1 || ws.Processed != 0 {
			t.Errorf("worker stats lease_lost=%d processed=%d, want 1 and 0", ws.LeaseLost, ws.Processed)
		}
		if err := b.c.Complete(b.ctx, other[0], "fresh"); err != nil {
			t.Fatalf("Complete by owner: %v", err)
		}
		if r, err := Result[string](b.ctx, b.c, id); r != "fresh" {
			t.Errorf("result = %q, %v; want the owner's", r, err)
		}
	})

	t.Run("BreakerOpensAfterFailures", func(t *testing.T) {
		t.Parallel()
		h := Define("t.Down", TaskOptions{MaxRetries: Ptr(0)}, func(context.Context, echoArgs) error { return httpErr{503} })
		b := setup(t, Config{Shards: 1, Handlers: []Handler{h}, CircuitThreshold: 2, Workers: 1})
		evs := collect(b.c, EventFailed)
		run(t, b.c)
		for range 3 {
			b.c.Enqueue(b.ctx, "t.Down", echoArgs{}, Opts{})
		}
		waitEvents(t, evs, 2)
		var s Stats
		for s.CircuitState != "open" {
			s, _ = b.c.Stats(b.ctx)
			if s.CircuitState == "closed" && s.CircuitFailures == 0 {
				t.Fatalf("stats = %+v, want failures counted", s)
			}
		}
		if !s.IsHealthy || len(s.Degraded) != 1 || s.Degraded[0] != "t.Down" {
			t.Errorf("IsHealthy = %v, Degraded = %v with an open circuit; want healthy, t.Down degraded", s.IsHealthy, s.Degraded)
		}
	})
}

func TestClient_Events(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1, AlertThreshold: 2})
	ch, unsub := b.c.Subscribe(EventEnqueued, EventAlert)
	for range 2 {
		if _, err := b.c.Enqueue(b.ctx, "t", echoArgs{}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.c.Enqueue(WithoutEvents(b.ctx), "t", echoArgs{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	b.c.checkAlert(b.ctx, true)
	unsub()
	b.c.checkAlert(b.ctx, true)
	var got []string
	for e := range ch { // closed by unsub
		if e.Kind == EventAlert {
			got = append(got, fmt.Sprintf("alert %s %d>%d", e.AlertType, e.Pending, e.Threshold))
		} else {
			got = append(got, string(e.Kind))
		}
	}
	want := []string{"job_enqueued", "job_enqueued", "alert QUEUE_SIZE 3>2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestClient_RunAutoscales(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	h := Define("t.Block", TaskOptions{}, func(ctx context.Context, _ echoArgs) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	b := setup(t, Config{Shards: 2, Handlers: []Handler{h}, Workers: 1,
		Autoscale: &Autoscale{Min: 1, Max: 6, UpThreshold: 50, DownThreshold: 5, CheckInterval: 10 * time.Millisecond, Cooldown: time.Nanosecond}})
	params := make([]EnqueueParams, 400)
	for i := range params {
		params[i] = EnqueueParams{Task: "t.Block", Payload: echoArgs{i}}
	}
	if _, err := b.c.EnqueueMany(b.ctx, params); err != nil {
		t.Fatal(err)
	}
	run(t, b.c)
	waitFor := func(what string, cond func(WorkerStats) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if ws, ok := b.c.WorkerStats(); ok && cond(ws) {
				return
			}
			if time.Now().After(deadline) {
				ws, _ := b.c.WorkerStats()
				t.Fatalf("%s: worker stats %+v", what, ws)
			}
		}
	}
	waitFor("scale up to Max under a backlog", func(ws WorkerStats) bool { return ws.Concurrency == 6 && ws.Running == 6 })
	t.Log("scaled up")
	close(release)
	if err := b.c.WaitIdle(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Log("idle")
	waitFor("scale down to Min once drained", func(ws WorkerStats) bool { return ws.Concurrency == 1 })
}

func TestClient_Stop(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	h := Define("t.Stuck", TaskOptions{}, func(ctx context.Context, _ echoArgs) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	b := setup(t, Config{Shards: 1, Handlers: []Handler{h}})
	done := make(chan error, 1)
	go func() { done <- b.c.Run(context.WithoutCancel(b.ctx)) }()
	id, _ := b.c.Enqueue(b.ctx, "t.Stuck", echoArgs{}, Opts{})
	<-started
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.c.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop = %v, want the deadline (the job ignored the drain until cancelled)", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	j, _ := b.c.Job(b.ctx, id)
	if j.Status != StatusPending || j.Attempts != 0 {
		t.Errorf("job after Stop = %s attempts=%d, want pending with the attempt refunded", j.Status, j.Attempts)
	}
}

func TestClient_RunPerTaskBreakers(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	a := Define("t.A", TaskOptions{MaxRetries: Ptr(0)}, func(context.Context, echoArgs) error {
		if healthy.Load() {
			return nil
		}
		return httpErr{503}
	})
	bh := Define("t.B", TaskOptions{}, func(context.Context, echoArgs) error { return nil })
	b := setup(t, Config{Shards: 1, Handlers: []Handler{a, bh}, CircuitThreshold: 2, CircuitTimeout: 50 * time.Millisecond, Workers: 1})
	failed := collect(b.c, EventFailed)
	completed := collect(b.c, EventCompleted)
	run(t, b.c)
	b.c.Enqueue(b.ctx, "t.A", echoArgs{}, Opts{})
	b.c.Enqueue(b.ctx, "t.A", echoArgs{}, Opts{})
	waitEvents(t, failed, 2)
	// t.A is open, or already half-open if the machine is slow; either
	// way it is not closed, and t.B is.
	s, _ := b.c.Stats(b.ctx)
	if s.Circuits["t.A"] == "closed" || s.Circuits["t.B"] != "closed" || s.CircuitState == "closed" {
		t.Fatalf("circuits = %v (overall %s), want t.A tripped and t.B closed", s.Circuits, s.CircuitState)
	}
	// t.B keeps running while t.A's breaker is open.
	b.c.Enqueue(b.ctx, "t.B", echoArgs{}, Opts{})
	if e := waitEvents(t, completed, 1)[0]; e.Task != "t.B" {
		t.Fatalf("completed %s, want t.B", e.Task)
	}
	// After the timeout t.A's probe finds no job and is released; a later
	// t.A job is still let through, and its success closes the breaker.
	healthy.Store(true)
	b.c.Enqueue(b.ctx, "t.A", echoArgs{}, Opts{})
	if e := waitEvents(t, completed, 1)[0]; e.Task != "t.A" {
		t.Fatalf("completed %s, want t.A", e.Task)
	}
	s, _ = b.c.Stats(b.ctx)
	if s.Circuits["t.A"] != "closed" {
		t.Errorf("t.A circuit = %s after a successful probe, want closed", s.Circuits["t.A"])
	}
}

func TestClient_RunRateLimitedTaskDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	slow := Define("t.Slow", TaskOptions{RateLimit: Rate{Limit: 1, Per: time.Hour}}, func(context.Context, echoArgs) error { return nil })
	fast := Define("t.Fast", TaskOptions{}, func(context.Context, echoArgs) error { return nil })
	b := setup(t, Config{Shards: 1, Handlers: []Handler{slow, fast}, Workers: 2})
	evs := collect(b.c, EventCompleted)
	for range 5 {
		b.c.Enqueue(b.ctx, "t.Slow", echoArgs{}, Opts{})
	}
	for range 20 {
		b.c.Enqueue(b.ctx, "t.Fast", echoArgs{}, Opts{})
	}
	run(t, b.c)
	count := map[string]int{}
	for _, e := range waitEvents(t, evs, 21) {
		count[e.Task]++
	}
	if count["t.Slow"] != 1 || count["t.Fast"] != 20 {
		t.Errorf("completed %v, want 1 t.Slow (one token per hour) and all 20 t.Fast", count)
	}
	ts, _ := b.c.TaskStats(b.ctx, "t.Slow")
	if ts.Pending != 4 || ts.Processing != 0 {
		t.Errorf("t.Slow stats = %+v, want 4 pending and none holding a worker", ts)
	}
}
