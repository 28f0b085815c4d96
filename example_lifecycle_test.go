package queuemax_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/queuemax/queuemax"
)

// ExampleClient_Cancel cancels a scheduled job at once and a running one,
// whose handler sees its context cancelled with cause ErrJobCancelled.
func ExampleClient_Cancel() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	started := make(chan queuemax.JobID, 1)
	causes := make(chan error, 1)
	export := queuemax.Handler{Name: "example.Export", Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
		started <- j.ID
		<-ctx.Done() // a long export, stopped by Cancel
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}}
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{export},
		HeartbeatInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	cancelled, unsubscribe := c.Subscribe(queuemax.EventCancelled)
	defer unsubscribe()

	later, _ := c.Enqueue(ctx, "example.Export", map[string]any{}, queuemax.Opts{RunAt: time.Now().Add(time.Hour)})
	st, err := c.Cancel(ctx, later)
	fmt.Println("scheduled job:", st, err)
	_, err = c.Cancel(ctx, later)
	fmt.Println("again:", errors.Is(err, queuemax.ErrJobFinished))
	<-cancelled

	go c.Run(ctx)
	now, _ := c.Enqueue(ctx, "example.Export", map[string]any{}, queuemax.Opts{})
	<-started
	st, _ = c.Cancel(ctx, now)
	fmt.Println("running job:", st)
	fmt.Println("handler stopped:", errors.Is(<-causes, queuemax.ErrJobCancelled))
	<-cancelled
	j, _ := c.Job(ctx, now)
	fmt.Println("then:", j.Status, "after", j.Attempts, "attempt")
	// Output:
	// scheduled job: cancelled <nil>
	// again: true
	// running job: processing
	// handler stopped: true
	// then: cancelled after 1 attempt
}

// ExampleCancel ends a job as cancelled from its handler: no retry, no dead
// letter.
func ExampleCancel() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	sync := queuemax.Define("example.Sync", queuemax.TaskOptions{}, func(ctx context.Context, a struct{ Account string }) error {
		if a.Account == "closed" {
			return queuemax.Cancel(fmt.Errorf("account %s: nothing to sync", a.Account))
		}
		return nil
	})
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{sync}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	done, unsubscribe := c.Subscribe(queuemax.EventCancelled)
	defer unsubscribe()
	go c.Run(ctx)
	id, _ := c.Enqueue(ctx, "example.Sync", map[string]string{"Account": "closed"}, queuemax.Opts{})
	e := <-done
	j, _ := c.Job(ctx, id)
	fmt.Println(e.Kind, j.Status, j.LastError)
	// Output:
	// job_cancelled cancelled account closed: nothing to sync
}

// ExampleSnooze runs a job again later without spending an attempt: here
// a report waits until its data is ready, with no retries allowed.
func ExampleSnooze() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	var checks atomic.Int32
	report := queuemax.DefineResult("example.Report", queuemax.TaskOptions{MaxRetries: queuemax.Ptr(0)},
		func(ctx context.Context, _ struct{}) (string, error) {
			if checks.Add(1) < 3 {
				return "", queuemax.Snooze(10 * time.Millisecond) // data not ready yet
			}
			return "built", nil
		})
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{report}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	done, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()
	go c.Run(ctx)
	id, _ := c.Enqueue(ctx, "example.Report", struct{}{}, queuemax.Opts{})
	<-done
	j, _ := c.Job(ctx, id)
	fmt.Printf("%s after %d snoozes and %d attempt: %s\n", j.Status, j.Snoozes, j.Attempts, j.Result)
	// Output:
	// completed after 2 snoozes and 1 attempt: "built"
}
