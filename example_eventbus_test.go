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
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close(); os.RemoveAll(dir) }
}

// ExampleEventBus follows one job that fails once and then succeeds, and
// prints the causality tree the bus recorded.
func ExampleEventBus() {
	ctx := context.Background()
	flaky := queuemax.Handler{Name: "example.Flaky", Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
		if j.Attempts == 1 {
			return nil, queuemax.RetryAfter(time.Millisecond, errors.New("connection reset"))
		}
		return nil, nil
	}}
	c, closeClient := openBusExample(ctx, flaky)
	defer closeClient()
	bus := queuemax.NewEventBus(c, queuemax.EventBusOptions{})
	defer bus.Close()

	done := make(chan queuemax.JobCompleted, 1)
	unsubscribe := queuemax.Subscribe(bus, func(e queuemax.JobCompleted) { done <- e })
	defer unsubscribe()

	if _, err := c.Enqueue(ctx, "example.Flaky", map[string]any{}, queuemax.Opts{}); err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error)
	go func() { ran <- c.Run(runCtx) }()
	e := <-done
	stop()
	fmt.Println("run:", <-ran)
	fmt.Printf("completed on attempt %d, caused by event #%d\n", e.Attempt, e.CauseID)
	fmt.Print(bus.Tree())
	// Output:
	// run: <nil>
	// completed on attempt 2, caused by event #1
	// #1 job_enqueued job=1024 shard=0 task=example.Flaky
	// ├─ #2 job_retried job=1024 attempt=1 error="connection reset"
	// └─ #3 job_completed job=1024 attempt=2
}

// ExampleEventBus_SubscribePattern subscribes to every job event with a
// glob.
func ExampleEventBus_SubscribePattern() {
	ctx := context.Background()
	c, closeClient := openBusExample(ctx)
	defer closeClient()
	bus := queuemax.NewEventBus(c, queuemax.EventBusOptions{})

	var kinds []queuemax.EventKind // written only by the subscriber's goroutine
	if _, err := bus.SubscribePattern("job_*", func(e queuemax.Event) { kinds = append(kinds, e.Kind) }); err != nil {
		fmt.Println(err)
		return
	}
	for _, task := range []string{"a", "b"} {
		if _, err := c.Enqueue(ctx, task, map[string]any{}, queuemax.Opts{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	bus.Close() // delivers what is buffered, then stops the subscriber
	fmt.Println(kinds)
	fmt.Println(bus.Stats().ByKind[queuemax.EventEnqueued], "enqueued")

	_, err := bus.SubscribePattern("jobs_*", func(queuemax.Event) {})
	fmt.Println(err)
	// Output:
	// [job_enqueued job_enqueued]
	// 2 enqueued
	// queuemax: event pattern "jobs_*" matches no event kind (kinds: [job_enqueued job_completed job_failed job_retried job_cancelled alert circuit_state_changed periodic_enqueued queue_paused queue_resumed])
}

// ExampleAwait waits for one job's completion without missing it: Await
// subscribes before the job can run.
func ExampleAwait() {
	ctx := context.Background()
	c, closeClient := openBusExample(ctx, queuemax.Handler{Name: "example.Noop",
		Func: func(context.Context, *queuemax.Job) (any, error) { return nil, nil }})
	defer closeClient()
	bus := queuemax.NewEventBus(c, queuemax.EventBusOptions{})
	defer bus.Close()

	id, err := c.Enqueue(ctx, "example.Noop", map[string]any{}, queuemax.Opts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	wait := queuemax.Await(bus, func(e queuemax.JobCompleted) bool { return e.JobID == id })
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error)
	go func() { ran <- c.Run(runCtx) }()

	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := wait(waitCtx)
	stop()
	<-ran
	fmt.Println(e.Task, "completed:", err == nil && e.JobID == id)
	// Output:
	// example.Noop completed: true
}

// ExampleExpect shows that Expect gives up when its context ends.
func ExampleExpect() {
	ctx := context.Background()
	c, closeClient := openBusExample(ctx)
	defer closeClient()
	bus := queuemax.NewEventBus(c, queuemax.EventBusOptions{})
	defer bus.Close()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err := queuemax.Expect[queuemax.JobFailed](ctx, bus, nil)
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// queuemax: expect job_failed: context deadline exceeded
	// true
}
