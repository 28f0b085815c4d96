package queuemax_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/queuemax/queuemax"
)

// ExampleClient_PeriodicTasks registers a nightly task with the scheduler
// and lists it.
func ExampleClient_PeriodicTasks() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	nightly := queuemax.Define("example.Nightly", queuemax.TaskOptions{}, func(context.Context, struct{}) error { return nil })
	nightly.Periodic = &queuemax.Periodic{Cron: "0 3 * * *", Misfire: queuemax.MisfireRunOnce}
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 1, Handlers: []queuemax.Handler{nightly},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	done := make(chan error)
	go func() { done <- c.RunScheduler(ctx) }()
	var tasks []queuemax.PeriodicInfo
	for len(tasks) == 0 { // wait until the scheduler has registered it
		tasks, _ = c.PeriodicTasks(ctx)
	}
	cancel()
	fmt.Println("scheduler:", <-done)
	p := tasks[0]
	fmt.Println(p.Task, p.Schedule, p.Misfire)
	fmt.Println("next run at 03:00 UTC:", p.NextRun.Hour() == 3 && p.NextRun.Minute() == 0)
	fmt.Println("within a day:", time.Until(p.NextRun) <= 24*time.Hour)
	fmt.Println("ran yet:", !p.LastRun.IsZero())
	// Output:
	// scheduler: <nil>
	// example.Nightly 0 3 * * * catch_up
	// next run at 03:00 UTC: true
	// within a day: true
	// ran yet: false
}
