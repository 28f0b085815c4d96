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
