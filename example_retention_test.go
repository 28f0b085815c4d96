package queuemax_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/queuemax/queuemax"
)

// ExampleConfig_completedRetention keeps completed jobs listed for an hour
// (the default): Jobs shows what succeeded and when, and the
// maintenance cleanup (Cleanup with zero, which Run calls) deletes them
// only once the hour has passed. RetentionOff deletes them at once, as
// queue-max does.
func ExampleConfig_completedRetention() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	send := queuemax.Define("example.Send", queuemax.TaskOptions{}, func(context.Context, struct{ To string }) error { return nil })
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{send},
		CompletedRetention: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	done, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()
	go c.Run(ctx)
	id, _ := c.Enqueue(ctx, "example.Send", map[string]any{"To": "a@example.com"}, queuemax.Opts{})
	<-done

	jobs, _ := c.Jobs(ctx, queuemax.ListParams{Status: queuemax.StatusCompleted})
	fmt.Println("completed:", len(jobs), jobs[0].ID == id, "finish time recorded:", !jobs[0].CompletedAt.IsZero())
	res, _ := c.Cleanup(ctx, 0)
	fmt.Println("cleanup within the hour deletes:", res.Jobs)
	// Output:
	// completed: 1 true finish time recorded: true
	// cleanup within the hour deletes: 0
}
