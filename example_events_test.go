package queuemax_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/queuemax/queuemax"
)

// openBusExample opens a one-shard client in a temporary directory; close
// releases both.
func openBusExample(ctx context.Context, handlers ...queuemax.Handler) (c *queuemax.Client, close func()) {
	dir, err := os.MkdirTemp("", "queuemax-example")
	if err != nil {
		panic(err)
	}
	c, err = queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 1, Handlers: handlers,
		AllowUnknownTasks: true, // the examples also enqueue tasks no handler here runs
		Logger:            slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close(); os.RemoveAll(dir) }
}

// awaitEvent reads events until one matches, for at most 10s.
func awaitEvent(ctx context.Context, events <-chan *queuemax.Event, match func(*queuemax.Event) bool) (*queuemax.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return nil, errors.New("event channel closed")
			}
			if match(e) {
				return e, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ExampleClient_Subscribe follows one job that fails once, snoozes once
// and then succeeds. Subscribe before starting the work, so that no event
// is missed.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	flaky := queuemax.Handler{Name: "example.Flaky", Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
		switch {
		case j.Attempts == 1:
			return nil, queuemax.RetryAfter(time.Millisecond, errors.New("connection reset"))
		case j.Snoozes == 0:
			return nil, queuemax.Snooze(time.Millisecond) // not ready yet; spends no attempt
		}
		return nil, nil
	}}
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	// One worker, so that each attempt's event is sent before the next
	// attempt runs (with more, a retry due at once may overtake it).
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Workers: 1, Handlers: []queuemax.Handler{flaky},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	events, cancel := c.Subscribe(queuemax.EventRetried, queuemax.EventSnoozed, queuemax.EventCompleted)
	defer cancel()

	if _, err := c.Enqueue(ctx, "example.Flaky", map[string]any{}, queuemax.Opts{}); err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error)
	go func() { ran <- c.Run(runCtx) }()
	for e := range events {
		fmt.Printf("%s attempt=%d", e.Kind, e.Attempt)
		if e.Error != "" {
			fmt.Printf(" error=%q", e.Error)
		}
		fmt.Println()
		if e.Kind == queuemax.EventCompleted {
			break
		}
	}
	stop()
	fmt.Println("run:", <-ran)
	// Output:
	// job_retried attempt=1 error="connection reset"
	// job_snoozed attempt=2
	// job_completed attempt=2
	// run: <nil>
}

// ExampleClient_SubscribeConfig shows that a reader that falls behind
// cannot slow the queue: once its buffer is full, its events are dropped
// and counted.
func ExampleClient_SubscribeConfig() {
	ctx := context.Background()
	c, closeClient := openBusExample(ctx)
	defer closeClient()

	events, cancel := c.SubscribeConfig(&queuemax.SubscribeConfig{ChanSize: 2, Kinds: []queuemax.EventKind{queuemax.EventEnqueued}})
	defer cancel()
	for range 5 { // nobody reads events meanwhile
		if _, err := c.Enqueue(ctx, "example.Bulk", map[string]any{}, queuemax.Opts{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	st := c.EventStats()
	fmt.Println("buffered:", len(events), "sent:", st.Sent, "dropped:", st.Dropped)
	// Output:
	// buffered: 2 sent: 2 dropped: 3
}
