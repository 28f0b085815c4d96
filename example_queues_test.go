package queuemax_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/queuemax/queuemax"
)

// Example_namedQueues gives the reports queue one of three workers: a
// flood of reports runs one at a time while the default queue's jobs
// still start at once on the other two.
func Example_namedQueues() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	release := make(chan struct{})
	reportStarted := make(chan struct{}, 10)
	mailSent := make(chan struct{}, 10)
	report := queuemax.Handler{Name: "example.Report", Options: queuemax.TaskOptions{Queue: "reports"},
		Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
			reportStarted <- struct{}{}
			<-release // a long report
			return nil, nil
		}}
	mail := queuemax.Handler{Name: "example.Mail", Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
		mailSent <- struct{}{}
		return nil, nil
	}}
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Workers: 3, Logger: slog.New(slog.DiscardHandler),
		Queues:   map[string]queuemax.QueueConfig{"reports": {MaxWorkers: 1}},
		Handlers: []queuemax.Handler{report, mail}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for range 5 {
		c.Enqueue(ctx, "example.Report", map[string]any{}, queuemax.Opts{})
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	<-reportStarted
	c.Enqueue(ctx, "example.Mail", map[string]any{}, queuemax.Opts{})
	c.Enqueue(ctx, "example.Mail", map[string]any{}, queuemax.Opts{})
	<-mailSent
	<-mailSent
	fmt.Println("mails sent while a report runs")
	qs, _ := c.Queues(ctx)
	for _, q := range qs {
		fmt.Printf("%s: %d waiting, max %d workers\n", q.Name, q.Pending, q.MaxWorkers)
	}
	close(release)
	c.WaitUntilEmpty(ctx)
	stop()
	fmt.Println("Run:", <-done)
	// Output:
	// mails sent while a report runs
	// default: 0 waiting, max 2 workers
	// reports: 4 waiting, max 1 workers
	// Run: <nil>
}

// ExampleClient_Pause pauses a queue: its jobs wait, on every process that
// shares the store, until Resume.
func ExampleClient_Pause() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	sent := make(chan string, 10)
	send := queuemax.Handler{Name: "example.Send", Func: func(ctx context.Context, j *queuemax.Job) (any, error) {
		sent <- j.Queue
		return nil, nil
	}}
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{send}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	events, unsubscribe := c.Subscribe(queuemax.EventQueuePaused)
	defer unsubscribe()

	if err := c.Pause(ctx, "emails"); err != nil {
		fmt.Println(err)
		return
	}
	e := <-events
	fmt.Println("event:", e.Kind, e.Queue)
	c.Enqueue(ctx, "example.Send", map[string]any{}, queuemax.Opts{Queue: "emails"})
	c.Enqueue(ctx, "example.Send", map[string]any{}, queuemax.Opts{})
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	fmt.Println("ran:", <-sent) // the emails job waits
	qs, _ := c.Queues(ctx)
	for _, q := range qs {
		if q.Name == "emails" {
			fmt.Printf("%s: paused %v, %d waiting\n", q.Name, q.Paused, q.Pending)
		}
	}
	c.Resume(ctx, "emails")
	fmt.Println("ran:", <-sent)
	stop()
	fmt.Println("Run:", <-done)
	// Output:
	// event: queue_paused emails
	// ran: default
	// emails: paused true, 1 waiting
	// ran: emails
	// Run: <nil>
}
